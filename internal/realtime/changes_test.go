package realtime

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/testutil/testdb"
)

// changeLog records the changes a broker hands to OnChange.
type changeLog struct {
	mu  sync.Mutex
	got []change
}

func (l *changeLog) on(b *PGBroker) {
	b.OnChange(func(kind, botID, conversationID string) {
		l.mu.Lock()
		l.got = append(l.got, change{kind, botID, conversationID})
		l.mu.Unlock()
	})
}

func (l *changeLog) has(c change) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.got, c)
}

func (l *changeLog) last() change {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.got) == 0 {
		return change{}
	}
	return l.got[len(l.got)-1]
}

// TestPGBrokerChanges: a change told by one node reaches the others'
// OnChange, and not its own; it is sent even by a node that believes it
// is alone (unlike wake-ups); a node forgets all when its listening
// session starts and when it stops, and Hearing tells which.
func TestPGBrokerChanges(t *testing.T) {
	url := testdb.PostgresURL(t)
	channel := "t" + model.NewNodeID()[5:13]

	// The changes that go out on the channel, seen from a plain session.
	told := watchChannel(t, url, channel, func(p string) bool { return strings.Contains(p, `"x":"bot"`) })

	var onA, onB changeLog
	a := startBroker(t, url, channel, onA.on)
	eventually(t, "A hears", a.b.Hearing)
	if got := onA.last(); got != (change{kind: ChangedAll}) {
		t.Fatalf("A's first change: %+v, want ChangedAll (it may have missed some)", got)
	}
	eventually(t, "A found itself alone", a.b.Alone)
	a.b.Tell("bot", "b1", "")
	eventually(t, "a change told by a node alone went out", func() bool { return told.Load() == 1 })

	b := startBroker(t, url, channel, onB.on)
	eventually(t, "B hears", b.b.Hearing)
	a.b.Tell("participants", "b1", "")
	a.b.Tell("conversation", "b1", "c1")
	eventually(t, "B got A's changes", func() bool {
		return onB.has(change{"participants", "b1", ""}) && onB.has(change{"conversation", "b1", "c1"})
	})
	if onA.has(change{"participants", "b1", ""}) {
		t.Fatal("A was handed its own change")
	}

	b.stop()
	if b.b.Hearing() {
		t.Fatal("B still hears after its listening session stopped")
	}
	if got := onB.last(); got != (change{kind: ChangedAll}) {
		t.Fatalf("B's last change: %+v, want ChangedAll (it may miss some now)", got)
	}
}

// TestChangesQueue: the changes waiting to be sent keep their order
// without repeats, come back before the later ones when a send failed,
// and past maxPendingChanges become one ChangedAll.
func TestChangesQueue(t *testing.T) {
	x := func(i int) change { return change{kind: "bot", bot: fmt.Sprint("b", i)} }
	tests := []struct {
		name string
		run  func(c *changes)
		want []change
	}{
		{"in order, no repeats", func(c *changes) {
			c.out.add(x(1))
			c.out.add(x(2))
			c.out.add(x(1))
		}, []change{x(1), x(2)}},
		{"put back before the later ones", func(c *changes) {
			c.out.add(x(1))
			c.out.add(x(2))
			failed := c.out.take()
			c.out.add(x(3))
			c.out.add(x(2))
			c.out.putBack(failed)
		}, []change{x(1), x(2), x(3)}},
		{"too many: forget all", func(c *changes) {
			for i := range maxPendingChanges + 1 {
				c.out.add(x(i))
			}
		}, []change{{kind: ChangedAll}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c changes
			tt.run(&c)
			if got := c.out.take(); !slices.Equal(got, tt.want) {
				t.Fatalf("pending %v, want %v", got, tt.want)
			}
		})
	}
}
