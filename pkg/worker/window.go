package worker

import (
	"time"

	"github.com/gitsave/gitsave/pkg/git"
	"github.com/gitsave/gitsave/pkg/save"
)

// window is the one open commit window of a worker: one author's edits to one
// target, waiting to become a commit.
type window struct {
	author save.Author
	target string

	// order keeps paths in first-seen order; latest holds each path's last
	// write (nil content = delete).
	order  []string
	latest map[string][]byte
	events int

	openedAt, lastEventAt time.Time

	// request is the CommitRequest attached to this window, at most one. Its
	// message becomes the commit message whichever path closes the window.
	request *request
}

func newWindow(author save.Author, target string, now time.Time) *window {
	return &window{author: author, target: target, latest: map[string][]byte{}, openedAt: now, lastEventAt: now}
}

// belongsTo reports whether edits of author to target go into this window.
func (win *window) belongsTo(author, target string) bool {
	return win.author.Username == author && win.target == target
}

// add records an edit: last write wins per path, first-seen order is kept.
func (win *window) add(ev Event, now time.Time) {
	if _, seen := win.latest[ev.Path]; !seen {
		win.order = append(win.order, ev.Path)
	}
	win.latest[ev.Path] = ev.Content
	win.events++
	win.lastEventAt = now
}

func (win *window) changes() []git.Change {
	out := make([]git.Change, 0, len(win.order))
	for _, p := range win.order {
		c := win.latest[p]
		if c == nil {
			out = append(out, git.Change{Path: p, Delete: true})
		} else {
			out = append(out, git.Change{Path: p, Content: c})
		}
	}
	return out
}
