// Package attribution answers "who made this change?" for watch events.
//
// Watch events do not carry the writer. gitsave therefore serves a validating
// admission webhook (Webhook) that records a Fact for every non-dry-run
// CREATE/UPDATE/DELETE of a watched resource before it answers; admission runs before
// the write persists, so the fact is in the Index before the watch event arrives and
// the ingest can take it without waiting (Index.Match / Index.MatchEvent). Events
// without a fact get the configured fallback author and are counted.
//
// The Index also serves the CommitRequest ordering barrier (Index.Pending): the
// author's admitted-but-not-yet-observed edits are the "edits made before Save".
//
// Security: Webhook trusts request.userInfo in the AdmissionReview it is given. It
// must only ever be reached by the kube-apiserver: the server routes the webhook path
// behind authentication and authorizes it by RBAC for the kube-apiserver's client
// certificate identity. Anyone else able to post reviews could attribute edits to
// arbitrary users. The handler itself does no I/O and always allows, so it can never
// block or deny a write (the configuration uses failurePolicy: Ignore).
package attribution
