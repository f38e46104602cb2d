package conversations

import (
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/testutil/testdb"
)

type fakePeers struct{ hearing bool }

func (p *fakePeers) Tell(kind, botID, conversationID string) {}
func (p *fakePeers) Hearing() bool                           { return p.hearing }

// TestCacheTTL: answers are kept for a minute only while the other nodes'
// changes are heard; without peers, or while not hearing them, a second.
func TestCacheTTL(t *testing.T) {
	tests := []struct {
		name  string
		peers Peers
		want  time.Duration
	}{
		{"no peers (SQLite)", nil, chatCacheTTL},
		{"peers heard", &fakePeers{hearing: true}, peerCacheTTL},
		{"peers not heard (the broker's session is down)", &fakePeers{}, chatCacheTTL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &caches{peers: tt.peers}
			if got := c.ttl(); got != tt.want {
				t.Fatalf("ttl = %v, want %v", got, tt.want)
			}
		})
	}
}

type closedStreams struct{ convs, bots []string }

func (c *closedStreams) CloseConversation(botID, conversationID string) {
	c.convs = append(c.convs, botID+"/"+conversationID)
}
func (c *closedStreams) EndBotStreams(botID string, keep func(string) bool) {
	c.bots = append(c.bots, botID)
}

// TestChanged: a change told by another node forgets what this node's
// caches hold of it, and ends the streams it ends on the node that made
// it; anything else (realtime.ChangedAll) forgets everything.
func TestChanged(t *testing.T) {
	type forgot struct{ scopes, keys, participants bool }
	tests := []struct {
		kind        string
		forgot      forgot
		convs, bots int
	}{
		{ChangedParticipants, forgot{participants: true}, 0, 0},
		{ChangedConversation, forgot{participants: true}, 1, 0},
		{ChangedBot, forgot{true, true, true}, 0, 1},
		{"*", forgot{true, true, true}, 0, 0},
	}
	db := testdb.SQLite(t)
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			streams := &closedStreams{}
			s := NewChat(db, nil, streams, nil, nil, nil)
			c := &s.cache
			before := [3]uint64{c.scopes.Generation(), c.keys.Generation(), c.participants.Generation()}
			s.Changed(tt.kind, "bot", "conv")
			got := forgot{c.scopes.Generation() != before[0], c.keys.Generation() != before[1], c.participants.Generation() != before[2]}
			if got != tt.forgot {
				t.Fatalf("forgot %+v, want %+v", got, tt.forgot)
			}
			if len(streams.convs) != tt.convs || len(streams.bots) != tt.bots {
				t.Fatalf("streams ended: conversations %v, bots %v", streams.convs, streams.bots)
			}
		})
	}
}
