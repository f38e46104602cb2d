package model

import (
	"strconv"
	"testing"
	"time"
)

// TestMessageTime: a conversation's messages get strictly increasing
// millisecond times however fast they come, a bot's answer comes after
// what it answers, conversations do not hold each other back, and the
// clock forgets conversations whose last message is old.
func TestMessageTime(t *testing.T) {
	a := ConversationRef{BotID: "b", ConversationID: "time-a"}
	b := ConversationRef{BotID: "b", ConversationID: "time-b"}
	var prev time.Time
	for i := range 50 {
		at := MessageTime(a, time.Time{})
		if !at.After(prev) || at.Truncate(time.Millisecond) != at {
			t.Fatalf("message %d at %v, after %v", i, at, prev)
		}
		prev = at
	}
	answer := MessageTime(a, prev)
	if !answer.After(prev) {
		t.Fatalf("answer at %v, not after its question at %v", answer, prev)
	}
	future := Now().Add(time.Hour)
	if at := MessageTime(a, future); !at.After(future) {
		t.Fatalf("a message after %v got %v", future, at)
	}
	if at := MessageTime(b, time.Time{}); at.After(Now().Add(time.Millisecond)) {
		t.Fatalf("another conversation's message at %v, held back by the first's", at)
	}
	for i := range 3000 {
		MessageTime(ConversationRef{BotID: "b", ConversationID: "many-" + strconv.Itoa(i)}, time.Time{})
	}
	messageClock.mu.Lock()
	n := len(messageClock.last)
	messageClock.mu.Unlock()
	if n < 3000 {
		t.Fatalf("%d conversations remembered, want the recent 3,000", n)
	}
	time.Sleep(1100 * time.Millisecond)
	for i := range messageClock.pruneAt + 1 {
		MessageTime(ConversationRef{BotID: "b", ConversationID: "later-" + strconv.Itoa(i)}, time.Time{})
	}
	messageClock.mu.Lock()
	_, kept := messageClock.last[ConversationRef{BotID: "b", ConversationID: "many-0"}]
	n = len(messageClock.last)
	messageClock.mu.Unlock()
	if kept {
		t.Fatalf("a conversation whose last message is a second old is still remembered (%d in all)", n)
	}
}
