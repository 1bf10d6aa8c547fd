package git

import (
	"context"
	"errors"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// Fetch reads the remote head of the branch, downloads the objects we lack
// (only the branch; what we already have is sent as "have"), and updates
// RemoteTip. Tip does not move. An empty remote or a missing branch gives the
// zero hash.
func (r *Repo) Fetch(ctx context.Context) (plumbing.Hash, error) {
	s, err := r.client.NewUploadPackSession(r.ep, r.auth)
	if err != nil {
		return plumbing.ZeroHash, classify("fetch", err)
	}
	defer s.Close()

	var head plumbing.Hash
	ar, err := s.AdvertisedReferencesContext(ctx)
	switch {
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
	case err != nil:
		return plumbing.ZeroHash, classify("fetch", err)
	default:
		head = ar.References[r.branch.String()]
	}

	if !head.IsZero() && !r.objs.kept(head) {
		if err := r.download(ctx, s, ar, head); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	tree, err := r.treeOf(head)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	r.remoteTip, r.remTree = head, tree
	if err := r.Persist(); err != nil {
		return plumbing.ZeroHash, err
	}
	return head, nil
}

func (r *Repo) download(ctx context.Context, s transport.UploadPackSession, ar *packp.AdvRefs, want plumbing.Hash) error {
	req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
	// A thin pack would hold deltas against objects outside it; a full pack is
	// simpler to store and the difference is small for our incremental fetches.
	req.Capabilities.Delete(capability.ThinPack)
	if ar.Capabilities.Supports(capability.NoProgress) {
		_ = req.Capabilities.Set(capability.NoProgress)
	}
	req.Wants = []plumbing.Hash{want}
	if !r.remoteTip.IsZero() {
		req.Haves = []plumbing.Hash{r.remoteTip}
	}
	resp, err := s.UploadPack(ctx, req)
	if err != nil {
		return classify("fetch", err)
	}
	defer resp.Close()

	var pack io.Reader = resp
	switch {
	case req.Capabilities.Supports(capability.Sideband64k):
		pack = sideband.NewDemuxer(sideband.Sideband64k, resp)
	case req.Capabilities.Supports(capability.Sideband):
		pack = sideband.NewDemuxer(sideband.Sideband, resp)
	}
	if err := packfile.UpdateObjectStorage(r.st, pack); err != nil {
		return classify("fetch", err)
	}
	return nil
}
