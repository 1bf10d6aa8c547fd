// Package ingest turns live Kubernetes objects into edits of the mirror.
//
// A Controller resolves every WatchRule's apiGroups/resources through
// discovery, runs one watch per (resource, namespace) shared by all rules that
// need it, and routes each change to the GitTargets of the rules in that
// namespace: the object is sanitized (package sanitize), compared with the
// last bytes seen (identical bytes are no edit), attributed from the admission
// facts (package attribution) or to the fallback author, and submitted to the
// target's worker. Objects controlled by another object are not mirrored.
//
// Lists are not edits. The first list of a watch and every relist (after a
// watch expired) replace the known state without events or attribution, and
// resync every target the watch feeds: the worker commits the difference
// between the live state and the folder as the committer. A target is also
// resynced when its routes change (its folder, or the resources routed to it),
// when a worker starts serving it (the Sink drops input for targets nobody
// serves), and on demand (Controller.Resync). Status-only updates of WatchRules
// and GitTargets never resync: a resync finalizes the open window. A resync
// waits until every watch feeding the target has listed, and is sent under the
// same lock as events, so the worker never gets a resync older than an event
// it already has.
//
// What cannot be mirrored — unknown resources, Secrets (no encryption yet),
// cluster-scoped resources, a missing GitTarget, a failing list/watch — is
// reported in the WatchRule's Ready condition; the rest of the rule is still
// mirrored. WebhookConfigReconciler keeps the admission webhook's rules in line
// with what is watched.
package ingest
