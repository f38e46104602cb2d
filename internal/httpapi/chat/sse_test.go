package chat_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/realtime"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/testutil/testdb"
)

// TestListenReplayAfterDrop: a stream dropped mid-conversation and reopened
// with Last-Event-ID gets every missed signal in order, with no gap and no
// duplicate, and ids are the conversation's sequence numbers.
func TestListenReplayAfterDrop(t *testing.T) {
	engines(t, func(t *testing.T, db store.DB) {
		e := newEnv(t, db, envOpts{bot: nopBot{}})
		_, key := e.user("")
		conv := e.conversation(key)
		s := e.listen(key, conv, -1)
		for i := range 5 {
			e.sendText(key, conv, fmt.Sprint("m", i))
		}
		var last int64
		for i := range 3 {
			f := s.next(5 * time.Second)
			if f.ID != int64(i+1) {
				t.Fatalf("frame %d has id %d", i, f.ID)
			}
			last = f.ID
		}
		s.close() // the connection drops after 3 frames were seen
		for i := 5; i < 10; i++ {
			e.sendText(key, conv, fmt.Sprint("m", i))
		}
		s2 := e.listen(key, conv, last)
		for want := last + 1; want <= 10; want++ {
			f := s2.next(5 * time.Second)
			if f.ID != want || f.Sig["payload"].(map[string]any)["text"] != fmt.Sprint("m", want-1) {
				t.Fatalf("replayed id %d %v, want %d", f.ID, f.Sig, want)
			}
		}
		// Live signals continue after the replay, still numbered.
		e.sendText(key, conv, "live")
		if f := s2.next(5 * time.Second); f.ID != 11 {
			t.Fatalf("live id %d", f.ID)
		}
		if _, ended := s2.ended(300 * time.Millisecond); ended {
			t.Fatal("stream ended")
		}
	})
}

// TestListenFirstFrameNotLost: a message posted right before the stream is
// registered still reaches it (the replay window), exactly once.
func TestListenFirstFrameNotLost(t *testing.T) {
	e := newEnv(t, testdb.SQLite(t), envOpts{})
	_, key := e.user("")
	conv := e.conversation(key)
	m := e.sendText(key, conv, "before listen")
	s := e.listen(key, conv, -1)
	f := s.next(5 * time.Second)
	if f.Sig["id"] != m["id"] {
		t.Fatalf("first frame %v", f.Sig)
	}
	reply := s.next(5 * time.Second)
	if reply.Sig["isBot"] != true {
		t.Fatalf("second frame %v", reply.Sig)
	}
	if got, _ := s.ended(300 * time.Millisecond); len(got) != 0 {
		t.Fatalf("duplicates: %v", got)
	}
}

// TestRemovedParticipantStream: the removed user's stream gets the removal
// notice and then ends; the owner's stream goes on (the e2e "removed
// listener" test: owner sees 2 user messages, user2 sees 1).
func TestRemovedParticipantStream(t *testing.T) {
	engines(t, func(t *testing.T, db store.DB) {
		e := newEnv(t, db, envOpts{})
		_, ownerKey := e.user("")
		u2, key2 := e.user("")
		conv := e.conversation(ownerKey)
		e.must(e.call("POST", "/conversations/"+conv+"/participants", ownerKey, map[string]any{"userId": u2}), 200)
		so := e.listen(ownerKey, conv, -1)
		s2 := e.listen(key2, conv, -1)
		e.sendText(ownerKey, conv, "foo")
		s2.waitFor(5*time.Second, func(f frame) bool { return f.Sig["isBot"] == true })
		e.must(e.call("DELETE", "/conversations/"+conv+"/participants/"+u2, ownerKey, "{}"), 200)
		e.sendText(ownerKey, conv, "bar")

		got, ended := s2.ended(3 * time.Second)
		if !ended {
			t.Fatal("removed participant's stream still open")
		}
		for _, f := range got {
			if f.Type == "message_created" {
				t.Fatalf("removed participant received %v", f.Sig)
			}
		}
		if len(got) == 0 || got[len(got)-1].Type != "participant_removed" {
			t.Fatalf("removed stream's last frames: %v", got)
		}
		n := 0
		deadline := time.Now().Add(5 * time.Second)
		for n < 2 {
			f := so.next(time.Until(deadline))
			if f.Type == "message_created" && f.Sig["isBot"] == false {
				n++
			}
		}
		// Listening again is refused, with a 4xx.
		if _, status := e.tryListen(e.base, key2, conv, -1); status != 403 {
			t.Fatalf("listen after removal: %d", status)
		}
	})
}

func TestListenRefusals(t *testing.T) {
	e := newEnv(t, testdb.SQLite(t), envOpts{})
	_, key := e.user("")
	_, other := e.user("")
	conv := e.conversation(key)
	for name, c := range map[string]struct {
		base, key, conv string
		status          int
	}{
		"no key":          {e.base, "", conv, 401},
		"bad key":         {e.base, "x.y.z", conv, 401},
		"not participant": {e.base, other, conv, 403},
		"unknown conv":    {e.base, key, "nope", 404},
		"unknown webhook": {e.srv.URL + "/chat/nope", key, conv, 404},
	} {
		if _, status := e.tryListen(c.base, c.key, c.conv, -1); status != c.status {
			t.Errorf("%s: %d, want %d", name, status, c.status)
		}
	}
	// A double slash (apiUrl ending in "/") and a multi-segment id work.
	fid := "a/b"
	e.must(e.call("POST", "/conversations", key, map[string]any{"id": fid}), 201)
	if _, status := e.tryListen(e.base+"/", key, fid, -1); status != 200 {
		t.Fatalf("listen on a//b: %d", status)
	}
}

// TestSlowConsumerDropped: a stream whose client stops reading is dropped
// once its buffer fills, without slowing the publisher or other streams.
func TestSlowConsumerDropped(t *testing.T) {
	e := newEnv(t, testdb.SQLite(t), envOpts{bot: nopBot{}, hub: realtime.Options{Buffer: 8, WriteTimeout: 200 * time.Millisecond}})
	_, key := e.user("")
	conv := e.conversation(key)
	slow := e.listen(key, conv, -1)
	slow.cancel() // stop reading: keep the connection, never read again
	fast := e.listen(key, conv, -1)
	big := make([]byte, 64<<10)
	for i := range big {
		big[i] = 'x'
	}
	// A blocked publisher would make fast.next time out; how long the
	// posts take on a loaded machine is not asserted.
	for i := range 60 {
		e.must(e.call("POST", "/messages", key, map[string]any{"conversationId": conv,
			"payload": map[string]any{"type": "text", "text": fmt.Sprint(i, string(big))}}), 201)
		fast.next(5 * time.Second)
	}
	if n := e.hub.Subscribers(e.bot.ID, conv); n != 1 {
		t.Fatalf("%d subscribers, want only the fast one", n)
	}
}

func TestShutdownClosesStreams(t *testing.T) {
	e := newEnv(t, testdb.SQLite(t), envOpts{})
	_, key := e.user("")
	conv := e.conversation(key)
	s := e.listen(key, conv, -1)
	time.Sleep(100 * time.Millisecond)
	e.hub.Close()
	if _, ended := s.ended(2 * time.Second); !ended {
		t.Fatal("stream open after shutdown")
	}
}
