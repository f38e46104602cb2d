package app_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/testutil/testapp"
	"github.com/parley-bots/parley/internal/testutil/testdb"
)

// timeoutBot waits for an answer with a 3 s inactivity timeout, and says
// "Timed out" from its timeout workflow.
const timeoutBot = `{"workflows":{
	"main":{"nodes":{"s":{"type":"start","cards":[
		{"type":"timeout","minutes":0.05},
		{"type":"capture","kind":"raw","variable":"workflow.x","prompt":"waiting for you"},
		{"type":"message","payload":"got {{ workflow.x }}"}]}}},
	"timeout":{"nodes":{"t":{"type":"start","cards":[{"type":"message","payload":"Timed out"}]}}}}}`

// startTimeoutConversation creates a user and a conversation on the bot at
// url, says hi and waits for the prompt.
func startTimeoutConversation(t *testing.T, url string) (c *chatHTTP, conv, userID string) {
	t.Helper()
	c, conv, userID = chatSession(t, url)
	c.say(t, conv, "hi")
	if got := c.botTexts(t, conv, userID, 1); !slices.Equal(got, []string{"waiting for you"}) {
		t.Fatalf("before the timeout: %q", got)
	}
	return c, conv, userID
}

// TestTimeoutAfterRestart stops the server between the last message and
// the dialog's timeout: the new server runs the timeout workflow on time,
// with no further event in the conversation.
func TestTimeoutAfterRestart(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		a1 := testapp.Start(t, cfg())
		_, url := workflowBot(t, a1, json.RawMessage(timeoutBot))
		c, conv, userID := startTimeoutConversation(t, url)
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a1.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if time.Since(start) > 2*time.Second {
			t.Skip("the shutdown took longer than the timeout: nothing left to check")
		}
		a2 := testapp.Start(t, cfg())
		c.url = strings.Replace(c.url, a1.URL, a2.URL, 1)
		got := c.botTexts(t, conv, userID, 2)
		if !slices.Equal(got, []string{"waiting for you", "Timed out"}) {
			t.Fatalf("after restart: %q", got)
		}
		// The dialog ended: the next message starts main again.
		c.call(t, "POST", "/messages", map[string]any{"conversationId": conv, "payload": map[string]any{"type": "text", "text": "again"}})
		if got := c.botTexts(t, conv, userID, 3); len(got) != 3 || got[2] != "waiting for you" {
			t.Fatalf("after the timeout: %q", got)
		}
	})
}

// TestTimeoutFiresOnceAcrossNodes runs two servers on one PostgreSQL
// database: the timeout workflow runs once, whichever node ran the turn.
func TestTimeoutFiresOnceAcrossNodes(t *testing.T) {
	url := testdb.PostgresURL(t)
	cfg := func() app.Config { return testapp.Config(t, url) }
	a1 := testapp.Start(t, cfg())
	a2 := testapp.Start(t, cfg())
	_, chatURL := workflowBot(t, a1, json.RawMessage(timeoutBot))
	// Two conversations, one through each node.
	type conv struct {
		c          *chatHTTP
		id, userID string
	}
	var convs []conv
	for _, a := range []*app.App{a1, a2} {
		c, id, userID := startTimeoutConversation(t, strings.Replace(chatURL, a1.URL, a.URL, 1))
		convs = append(convs, conv{c: c, id: id, userID: userID})
	}
	for _, cv := range convs {
		got := cv.c.botTexts(t, cv.id, cv.userID, 2)
		if !slices.Equal(got, []string{"waiting for you", "Timed out"}) {
			logTimeoutState(t, a1, a2)
			t.Fatalf("conversation %s: %q", cv.id, got)
		}
	}
	// Two more scheduler ticks on each node: still one timeout each.
	time.Sleep(2500 * time.Millisecond)
	for _, cv := range convs {
		if got := cv.c.botTexts(t, cv.id, cv.userID, 0); !slices.Equal(got, []string{"waiting for you", "Timed out"}) {
			t.Fatalf("conversation %s: %q", cv.id, got)
		}
	}
}

// logTimeoutState logs what tells a timeout that did not fire from one
// that fired late: each node's readyz (which leads the scheduler, which
// conversations it holds), the timeouts still stored and the
// conversations with pending turns.
func logTimeoutState(t *testing.T, nodes ...*app.App) {
	t.Helper()
	ctx := context.Background()
	for _, a := range nodes {
		ready := (&chatHTTP{url: a.URL}).call(t, "GET", "/readyz", nil)
		t.Logf("node %s readyz: %v", a.URL, ready)
	}
	db := nodes[0].Store()
	due, err := db.DialogTimeouts().Due(ctx, time.Now().Add(time.Hour), 10)
	t.Logf("dialog timeouts due within the hour (now %s): err %v", time.Now().UTC().Format(time.RFC3339Nano), err)
	for _, d := range due {
		t.Logf("  %s due %s", d.ConversationID, d.DueAt.UTC().Format(time.RFC3339Nano))
	}
	pending, err := db.Signals().PendingConversations(ctx, 10)
	t.Logf("conversations with pending turns: %v (err %v)", pending, err)
}

// TestFoldedDialogAfterATimeout: a folded turn leaves its dialog (waiting
// for a capture) to the conversation's next message; the dialog's timeout,
// a turn of its own, ends that dialog first, so the next message starts
// main again instead of answering the capture, on both engines.
func TestFoldedDialogAfterATimeout(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		a, _, url := foldedWorkflowBot(t, cfg, timeoutBot)
		before := foldedMessages(t, a)
		c, conv, userID := startTimeoutConversation(t, url)
		if got := c.botTexts(t, conv, userID, 2); !slices.Equal(got, []string{"waiting for you", "Timed out"}) {
			t.Fatalf("the timeout: %q", got)
		}
		c.say(t, conv, "again")
		if got := c.botTexts(t, conv, userID, 3); !slices.Equal(got, []string{"waiting for you", "Timed out", "waiting for you"}) {
			t.Fatalf("after the timeout: %q", got)
		}
		c.say(t, conv, "Ada")
		if got := c.botTexts(t, conv, userID, 4); len(got) != 4 || got[3] != "got Ada" {
			t.Fatalf("the capture's answer: %q", got)
		}
		if n := foldedMessages(t, a) - before; n != 3 {
			t.Fatalf("%v of 3 messages folded", n)
		}
	})
}
