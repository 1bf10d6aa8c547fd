package git

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
)

// PushStats describes the pack sent by the last Push that sent one.
type PushStats struct {
	Objects int // object count in the pack header
	Bytes   int // pack size
}

// LastPush returns what the last pack-sending Push sent.
func (r *Repo) LastPush() PushStats { return r.lastPush }

// Push moves the remote branch from RemoteTip to Tip, as a compare-and-swap,
// sending only the objects Commit created since RemoteTip. It does not use
// go-git's Remote.Push, whose object walk grows with the whole history.
//
// Errors: ErrRejected if the remote branch is not at RemoteTip (someone else
// pushed), ErrAuth for missing or refused credentials, anything else is
// transient. With nothing to push it returns at once.
func (r *Repo) Push(ctx context.Context) (plumbing.Hash, error) {
	if r.tip == r.remoteTip {
		return r.tip, nil
	}
	s, err := r.client.NewReceivePackSession(r.ep, r.auth)
	if err != nil {
		return plumbing.ZeroHash, classify("push", err)
	}
	defer s.Close()

	// receive-pack advertises an empty repository too, so no special case here.
	ar, err := s.AdvertisedReferencesContext(ctx)
	if err != nil {
		return plumbing.ZeroHash, classify("push", err)
	}
	switch cur := ar.References[r.branch.String()]; cur {
	case r.remoteTip:
	case r.tip:
		// An earlier attempt landed but its answer was lost.
		r.pushed()
		return r.tip, nil
	default:
		return plumbing.ZeroHash, fmt.Errorf("%w: remote %s is at %s, expected %s",
			ErrRejected, r.branch, short(cur), short(r.remoteTip))
	}

	var pack bytes.Buffer
	// Window 0: no delta search; the pack is a handful of objects.
	useRefDeltas := !ar.Capabilities.Supports(capability.OFSDelta)
	src := packSource{EncodedObjectStorer: r.st, objs: r.objs}
	if _, err := packfile.NewEncoder(&pack, src, useRefDeltas).Encode(r.objs.pendingOrder, 0); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("git push: build pack: %w", err)
	}
	stats := PushStats{Objects: int(binary.BigEndian.Uint32(pack.Bytes()[8:12])), Bytes: pack.Len()}

	req := packp.NewReferenceUpdateRequestFromCapabilities(ar.Capabilities)
	req.Commands = []*packp.Command{{Name: r.branch, Old: r.remoteTip, New: r.tip}}
	req.Packfile = io.NopCloser(&pack)
	rs, err := s.ReceivePack(ctx, req)
	if err := classifyReport(rs, err); err != nil {
		return plumbing.ZeroHash, err
	}
	r.lastPush = stats
	r.pushed()
	return r.tip, nil
}

// pushed records that the remote branch is now at Tip. Nothing is written
// here, so the caller can report the push first and Persist after.
func (r *Repo) pushed() {
	r.remoteTip, r.remTree = r.tip, r.tipTree
	r.objs.pushed()
}

// Persist writes what the remote has accepted to the on-disk cache: the pushed
// objects, then the tracking ref (so a restart's fetch starts from there) and
// the local branch. Push does not do it, so a Save is reported as pushed
// without waiting for the disk; until then the objects are served from memory.
// After a failure nothing is lost and the next call (or Fetch) retries.
func (r *Repo) Persist() error {
	if err := r.objs.store(); err != nil {
		return err
	}
	if r.storedRemote != r.remoteTip {
		if err := r.setRef(r.tracking, r.remoteTip); err != nil {
			return fmt.Errorf("git: update %s: %w", r.tracking, err)
		}
		r.storedRemote = r.remoteTip
	}
	r.mirrorBranch()
	return nil
}

func short(h plumbing.Hash) string {
	if h.IsZero() {
		return "(none)"
	}
	return h.String()[:12]
}
