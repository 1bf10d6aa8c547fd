package worker

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The user's message comes back byte for byte whatever it looks like.
func TestMessageWithoutTrailersRoundTrips(t *testing.T) {
	for _, msg := range []string{
		"one line",
		"subject\n\nbody\n",
		"ends with newlines\n\n\n",
		"subject\n\nSigned-off-by: jane <jane@example.com>",
		"Commit-Request: fake/one",
		"",
	} {
		full := requestMessage(msg, "demo", "save-1", "1234")
		assert.Equal(t, msg, MessageWithoutTrailers(full), "%q", msg)
		ref, uid, ok := RequestTrailers(full)
		assert.True(t, ok)
		assert.Equal(t, "demo/save-1", ref)
		assert.Equal(t, "1234", uid)
	}
	assert.Equal(t, "plain\n", MessageWithoutTrailers("plain\n"))
	_, _, ok := RequestTrailers("plain")
	assert.False(t, ok)
}
