package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode"

	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/testutil/testapp"
)

// botFiles calls the Files API (and the Runtime API) as one bot, with its
// bot token.
type botFiles struct {
	t     *testing.T
	a     *app.App
	botID string
	token string
}

func newBotFiles(t *testing.T, a *app.App, botID string) *botFiles {
	t.Helper()
	token, err := a.RuntimeAPI().Credentials.MintBotToken(context.Background(), botID)
	if err != nil {
		t.Fatal(err)
	}
	return &botFiles{t: t, a: a, botID: botID, token: token}
}

// call sends a request and decodes the answer into out; any status but
// 200 fails the test.
func (b *botFiles) call(method, path, body string, out any) {
	b.t.Helper()
	req, _ := http.NewRequest(method, b.a.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+b.token)
	req.Header.Set("x-bot-id", b.botID)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		b.t.Fatalf("%s %s: %s %s", method, path, res.Status, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			b.t.Fatalf("%s %s: %v", method, path, err)
		}
	}
}

// upload upserts a file to be indexed, uploads its content and waits for
// its indexing to complete.
func (b *botFiles) upload(key, content string, tags map[string]string) string {
	b.t.Helper()
	tj, _ := json.Marshal(tags)
	var up struct {
		File struct{ ID, UploadURL string }
	}
	b.call("PUT", "/v1/files", `{"key":"`+key+`","size":`+strconv.Itoa(len(content))+`,"index":true,"tags":`+string(tj)+`}`, &up)
	res, err := http.DefaultClient.Do(mustRequest(b.t, "PUT", up.File.UploadURL, content))
	if err != nil || res.StatusCode != 200 {
		b.t.Fatalf("upload %s: %v %v", key, res, err)
	}
	res.Body.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var f struct {
			File struct{ Status, FailedStatusReason string }
		}
		b.call("GET", "/v1/files/"+up.File.ID, "", &f)
		if f.File.Status == "indexing_completed" {
			return up.File.ID
		}
		if f.File.Status == "indexing_failed" || time.Now().After(deadline) {
			b.t.Fatalf("%s not indexed: %s %s", key, f.File.Status, f.File.FailedStatusReason)
		}
		time.Sleep(30 * time.Millisecond)
	}
}

func (b *botFiles) createKB(name string, tags map[string]string) {
	b.t.Helper()
	tj, _ := json.Marshal(tags)
	b.call("POST", "/v1/files/knowledge-bases", `{"name":"`+name+`","tags":`+string(tj)+`}`, nil)
}

// search runs searchFiles and returns "key: content" of each passage.
func (b *botFiles) search(query string) []string {
	b.t.Helper()
	var res struct {
		Passages []struct {
			Content string
			File    struct{ Key string }
		}
	}
	b.call("GET", "/v1/files/search?query="+strings.ReplaceAll(query, " ", "+")+"&limit=5", "", &res)
	var out []string
	for _, p := range res.Passages {
		out = append(out, p.File.Key+": "+p.Content)
	}
	return out
}

// ask sends a user's text message through the Runtime API in a fresh
// conversation and returns the bot's replies once n have arrived.
func (b *botFiles) ask(question string, n int) []string {
	b.t.Helper()
	var u struct{ User struct{ ID string } }
	b.call("POST", "/v1/chat/users", `{"tags":{}}`, &u)
	var c struct{ Conversation struct{ ID string } }
	b.call("POST", "/v1/chat/conversations", `{"channel":"dm","tags":{}}`, &c)
	q, _ := json.Marshal(question)
	b.call("POST", "/v1/chat/messages", `{"conversationId":"`+c.Conversation.ID+`","userId":"`+u.User.ID+`","type":"text","payload":{"text":`+string(q)+`},"tags":{}}`, nil)
	deadline := time.Now().Add(15 * time.Second)
	for {
		var ms struct {
			Messages []struct {
				Direction string
				Payload   struct{ Text string }
			}
		}
		b.call("GET", "/v1/chat/messages?conversationId="+c.Conversation.ID, "", &ms)
		var out []string
		for i := len(ms.Messages) - 1; i >= 0; i-- { // oldest first
			if ms.Messages[i].Direction == "outgoing" {
				out = append(out, ms.Messages[i].Payload.Text)
			}
		}
		if len(out) >= n {
			return out
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("asked %q: %d replies, want %d: %q", question, len(out), n, out)
		}
		time.Sleep(30 * time.Millisecond)
	}
}

// The help center's documents, in three formats, and a file outside the
// knowledge base that also speaks of refunds.
var helpDocs = []struct{ key, content string }{
	{"shipping.md", "# Shipping\n\n## Delivery times\n\nParcels are delivered within three working days.\n\n## Costs\n\nShipping is free above fifty euros.\n"},
	{"returns.html", "<html><body><h1>Returns</h1><h2>Refunds</h2><p>Refunds are paid back to your card within fourteen days.</p>" +
		"<h2>Exchanges</h2><p>Items can be exchanged in any of our shops.</p></body></html>"},
	{"warranty.txt", "Every appliance is guaranteed for two years.\n\nThe guarantee covers defects, not accidental damage.\n"},
}

// stockHelpCenter uploads the help documents tagged kb=help and a staff
// note outside it, and creates the "Help center" knowledge base (and an
// empty "Archive" one).
func stockHelpCenter(b *botFiles) {
	for _, d := range helpDocs {
		b.upload(d.key, d.content, map[string]string{"kb": "help"})
	}
	b.upload("staff-notes.txt", "Staff refunds are approved by the manager, refund forms are in the office.", map[string]string{"kb": "staff"})
	b.createKB("Help center", map[string]string{"kb": "help"})
	b.createKB("Archive", map[string]string{"kb": "archive"})
}

// kbCodeBot answers from event.kb; its before_incoming_message hook
// records what it saw of event.kb.
const kbCodeBot = `
bot.hook('before_incoming_message', async ({ event, state }) => {
  state.conversation.hookSaw = event.kb ? event.kb.included.length + ' bases, ' + event.kb.results.length + ' results' : 'no kb'
})
bot.on.message('text', async ({ event, client, state }) => {
  let text
  if (!('kb' in event)) {
    text = 'kb absent; hook: ' + state.conversation.hookSaw
  } else {
    const top = event.kb.results[0]
    text = event.kb.included.map((k) => k.name).sort().join(', ') + ' | ' + (top ? top.file.key + ' (' + top.breadcrumb + '): ' + top.content : 'nothing found') +
      ' | only help files: ' + event.kb.results.every((r) => r.file.tags.kb === 'help' && r.knowledgeBaseId === event.kb.included.find((k) => k.name === 'Help center').id && r.score > 0) +
      ' | hook: ' + state.conversation.hookSaw
  }
  await client.createMessage({ conversationId: event.conversationId, payload: { type: 'text', text } })
})`

// kbWorkflowBot answers from its "Help center" (by name; not from the
// bot's other base): every message gets its queryKnowledgeBase card's
// answer (said with its source and stored); it reports event.kb and what
// was stored, and asks a base it does not have.
const kbWorkflowBot = `{
  "knowledgeBases": [{"id": "help", "name": "Help center"}],
  "workflows": {"main": {"nodes": {
    "start": {"type": "start", "cards": [{"type": "always", "to": "ask"}]},
    "ask": {"type": "standard", "cards": [
      {"type": "queryKnowledgeBase", "say": true, "output": "conversation.answer"},
      {"type": "queryKnowledgeBase", "knowledgeBases": ["No such base"], "output": "conversation.none"},
      {"type": "queryKnowledgeBase", "question": "how long is the {{ 'guar' + 'antee' }}?", "knowledgeBases": ["Help center"], "output": "conversation.guarantee"},
      {"type": "message", "payload": "kb: {{ event.kb ? event.kb.included.map(k => k.name).sort().join(', ') + ', ' + (event.kb.results[0] ? event.kb.results[0].file.key : 'no result') : 'absent' }}; stored: {{ conversation.answer === null ? 'null' : 'text' }}, {{ conversation.none === null ? 'null' : 'text' }}, {{ conversation.guarantee }}"},
      {"type": "wait"},
      {"type": "always", "to": "ask"}
    ]}
  }}},
  "triggers": [{"type": "conversation_started", "workflow": "main"}]
}`

// TestKnowledgeBasesThroughChatClient: bots answer users of @botpress/chat
// from a knowledge base of several documents (Markdown, HTML, text), on
// both engines. A code bot sees event.kb.included and event.kb.results
// (also in its before_incoming_message hook); a bot without knowledge
// bases has no event.kb; a workflow bot that lists one of its two bases
// queries only that one, its queryKnowledgeBase card says the best passage
// with its source and stores it, a base it does not have answers null,
// and its templates see event.kb too.
func TestKnowledgeBasesThroughChatClient(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		a := testapp.Start(t, cfg())
		withKB, withKBURL, _ := codeBot(t, a, kbCodeBot)
		stockHelpCenter(newBotFiles(t, a, withKB.ID))
		// Same files, no knowledge base.
		noKB, noKBURL, _ := codeBot(t, a, kbCodeBot)
		plain := newBotFiles(t, a, noKB.ID)
		for _, d := range helpDocs {
			plain.upload(d.key, d.content, map[string]string{"kb": "help"})
		}
		wfID, wfURL := workflowBot(t, a, json.RawMessage(kbWorkflowBot))
		stockHelpCenter(newBotFiles(t, a, wfID))

		bots := []compatBot{
			{Name: "code bot with a knowledge base", URL: withKBURL, Scripts: []any{
				map[string]any{"name": "delivery", "conversation": []any{
					map[string]any{"user": "how long until my parcel gets delivered?"},
					map[string]any{"bot": "Archive, Help center | shipping.md (Shipping > Delivery times): Parcels are delivered within three working days. | only help files: true | hook: 2 bases, 1 results"},
				}},
				map[string]any{"name": "refund, not the staff note", "conversation": []any{
					map[string]any{"user": "when is my refund paid?"},
					map[string]any{"bot": "/Archive, Help center \\| returns.html \\(Returns > Refunds\\): Refunds are paid back to your card within fourteen days. \\| only help files: true \\| hook: 2 bases, \\d+ results/"},
				}},
				map[string]any{"name": "nothing found", "conversation": []any{
					map[string]any{"user": "zebra xylophone"},
					map[string]any{"bot": "Archive, Help center | nothing found | only help files: true | hook: 2 bases, 0 results"},
				}},
			}},
			{Name: "code bot without knowledge bases", URL: noKBURL, Scripts: []any{
				map[string]any{"name": "no kb", "conversation": []any{
					map[string]any{"user": "how long until my parcel gets delivered?"},
					map[string]any{"bot": "kb absent; hook: no kb"},
				}},
			}},
			{Name: "workflow bot", URL: wfURL, Scripts: []any{
				map[string]any{"name": "card answers with its source", "conversation": []any{
					map[string]any{"user": "are exchanges possible?"},
					map[string]any{"bot": "Items can be exchanged in any of our shops.\n\nSource: returns.html"},
					map[string]any{"bot": "/kb: Help center, returns.html; stored: text, null, (Every appliance is guaranteed for two years\\.|The guarantee covers defects, not accidental damage\\.)/"},
					map[string]any{"user": "do parcels ship quickly?"},
					map[string]any{"bot": "Parcels are delivered within three working days.\n\nSource: shipping.md"},
					map[string]any{"bot": "/kb: Help center, shipping.md; stored: text, null, .*/"},
					map[string]any{"user": "zebra xylophone"},
					map[string]any{"bot": "/kb: Help center, no result; stored: null, null, .*/"},
				}},
			}},
		}
		file := filepath.Join(t.TempDir(), "bots.json")
		data, _ := json.Marshal(bots)
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		out := testapp.RunNode(t, "workflow.mjs", map[string]string{"WORKFLOW_BOTS": file})
		t.Log(out[max(0, len(out)-300):])
	})
}

// modelServer is a small OpenAI-compatible server on loopback standing in
// for a remote model service: /v1/embeddings embeds a text as its counts
// of a few concepts (so "automobile" is near "car" without sharing a
// word), /v1/chat/completions composes "Composed: " and the first
// passage it was given. Both need the API key, and both fail with 500
// while failing is set.
type modelServer struct {
	*httptest.Server
	failing    atomic.Bool
	embeds     atomic.Int64 // texts embedded
	chats      atomic.Int64
	lastPrompt atomic.Value
}

var concepts = [][]string{
	{"car", "cars", "automobile", "automobiles", "vehicle", "vehicles"},
	{"hire", "rent", "rental", "renting", "lease"},
	{"refund", "refunds", "reimbursed", "reimbursement", "money"},
	{"insured", "insurance", "cover", "covered"},
}

func conceptVector(text string) []float32 {
	v := make([]float32, len(concepts))
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) }) {
		for i, c := range concepts {
			if slices.Contains(c, w) {
				v[i]++
			}
		}
	}
	return v
}

func startModelServer(t *testing.T) *modelServer {
	m := &modelServer{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer test-key" {
			http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
			return
		}
		if m.failing.Load() {
			http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusInternalServerError)
			return
		}
		var body struct {
			Model    string
			Input    []string
			Messages []struct{ Role, Content string }
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/v1/embeddings" && body.Model == "concepts":
			var data []map[string]any
			for i, text := range body.Input {
				data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": conceptVector(text)})
			}
			m.embeds.Add(int64(len(body.Input)))
			_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": body.Model})
		case r.URL.Path == "/v1/chat/completions" && body.Model == "composer" && len(body.Messages) == 2:
			prompt := body.Messages[1].Content
			m.lastPrompt.Store(prompt)
			m.chats.Add(1)
			first := ""
			if _, rest, ok := strings.Cut(prompt, "[1] "); ok {
				_, first, _ = strings.Cut(rest, "\n")
				first, _, _ = strings.Cut(first, "\n")
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"object": "chat.completion", "choices": []any{
				map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": "Composed: " + first}, "finish_reason": "stop"}}})
		default:
			http.Error(w, `{"error":{"message":"unexpected request"}}`, http.StatusBadRequest)
		}
	}))
	t.Cleanup(m.Close)
	return m
}

// kbAnswerBot answers every message with its queryKnowledgeBase card.
const kbAnswerBot = `{
  "workflows": {"main": {"nodes": {
    "start": {"type": "start", "cards": [{"type": "always", "to": "ask"}]},
    "ask": {"type": "standard", "cards": [
      {"type": "queryKnowledgeBase", "say": true},
      {"type": "wait"},
      {"type": "always", "to": "ask"}
    ]}
  }}},
  "triggers": [{"type": "conversation_started", "workflow": "main"}]
}`

// TestKnowledgeModelEndpoints: with an embeddings endpoint and an
// answer-generation endpoint configured (a loopback OpenAI-compatible
// server), passages are embedded when indexed, searchFiles finds a
// passage that shares no word with the question, and the workflow card
// says a composed answer with its source. When the endpoints fail,
// indexing still completes, search falls back to full text and the card
// answers with the best passage: the turn still answers.
func TestKnowledgeModelEndpoints(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		models := startModelServer(t)
		c := cfg()
		c.EmbeddingsURL, c.EmbeddingsModel, c.EmbeddingsKey = models.URL+"/v1/embeddings", "concepts", "test-key"
		c.AnswerURL, c.AnswerModel, c.AnswerKey = models.URL+"/v1/chat/completions", "composer", "test-key"
		a := testapp.Start(t, c)
		id, _ := workflowBot(t, a, json.RawMessage(kbAnswerBot))
		b := newBotFiles(t, a, id)
		b.upload("fleet.md", "# Fleet\n\n## Renting\n\nYou can hire a car for a weekend.\n\n## Insurance\n\nEvery vehicle is insured.\n", map[string]string{"kb": "docs"})
		b.upload("money.txt", "Refunds are paid within fourteen days.", map[string]string{"kb": "docs"})
		b.createKB("Docs", map[string]string{"kb": "docs"})
		if n := models.embeds.Load(); n != 3 {
			t.Fatalf("%d passages embedded at indexing, want 3 (headings are not)", n)
		}

		// Semantic: no word in common; fused with full text.
		if got := b.search("automobile rental"); len(got) != 2 || got[0] != "fleet.md: You can hire a car for a weekend." || got[1] != "fleet.md: Every vehicle is insured." {
			t.Fatalf("semantic search: %q", got)
		}
		if got := b.search("refunds"); len(got) == 0 || got[0] != "money.txt: Refunds are paid within fourteen days." {
			t.Fatalf("fused search: %q", got)
		}
		// The card composes its answer from the passages found.
		if got := b.ask("automobile rental?", 1)[0]; got != "Composed: You can hire a car for a weekend.\n\nSource: fleet.md" {
			t.Fatalf("composed answer: %q", got)
		}
		prompt, _ := models.lastPrompt.Load().(string)
		if !strings.Contains(prompt, "[1] (fleet.md, Fleet > Renting)\nYou can hire a car for a weekend.") || !strings.HasSuffix(prompt, "Question: automobile rental?") {
			t.Fatalf("prompt: %q", prompt)
		}

		// The endpoints fail: indexing completes without embeddings, search
		// is full text, the card answers with the best passage.
		models.failing.Store(true)
		chats := models.chats.Load()
		b.upload("hours.txt", "The counter opens at eight.", map[string]string{"kb": "docs"})
		// (A new query: recent queries' vectors are cached.)
		if got := b.search("rental automobiles"); len(got) != 0 {
			t.Fatalf("full-text fallback found %q for words no passage has", got)
		}
		if got := b.search("refunds"); len(got) != 1 || got[0] != "money.txt: Refunds are paid within fourteen days." {
			t.Fatalf("full-text fallback: %q", got)
		}
		if got := b.search("counter"); len(got) != 1 || got[0] != "hours.txt: The counter opens at eight." {
			t.Fatalf("file indexed while the endpoint failed: %q", got)
		}
		if got := b.ask("when are refunds paid?", 1)[0]; got != "Refunds are paid within fourteen days.\n\nSource: money.txt" {
			t.Fatalf("extractive answer: %q", got)
		}
		if models.chats.Load() != chats {
			t.Fatal("a failing endpoint answered")
		}
	})
}

// TestKnowledgeBaseChangesReachTheNextTurn: the turns' list of a bot's
// knowledge bases is cached (files.KnowledgeBases.forBot); creating,
// renaming and deleting a base must reach the very next message's
// event.kb.
func TestKnowledgeBaseChangesReachTheNextTurn(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		a := testapp.Start(t, cfg())
		bot, chatURL, _ := codeBot(t, a, `bot.on.message('text', async ({ message, event, client }) => {
  const names = event.kb ? event.kb.included.map(k => k.name).join(',') : 'none'
  await client.createMessage({ conversationId: message.conversationId, payload: { type: 'text', text: message.payload.text + '=' + names } })
})`)
		b := newBotFiles(t, a, bot.ID)
		key, convID := newChatConversation(t, chatURL)
		ask := func(n int) string {
			t.Helper()
			sendChatText(t, chatURL, key, convID, fmt.Sprint(n))
			prefix := fmt.Sprint(n) + "="
			got := waitForBotText(t, a, bot.ID, convID, func(s string) bool { return strings.HasPrefix(s, prefix) })
			return strings.TrimPrefix(got, prefix)
		}
		if got := ask(1); got != "none" {
			t.Fatalf("before any base: %q", got)
		}
		var kb struct{ KnowledgeBase struct{ ID string } }
		b.call("POST", "/v1/files/knowledge-bases", `{"name":"first","tags":{"kb":"1"}}`, &kb)
		if got := ask(2); got != "first" {
			t.Fatalf("after create: %q", got)
		}
		b.call("PUT", "/v1/files/knowledge-bases/"+kb.KnowledgeBase.ID, `{"name":"renamed","tags":{}}`, nil)
		if got := ask(3); got != "renamed" {
			t.Fatalf("after rename: %q", got)
		}
		b.call("DELETE", "/v1/files/knowledge-bases/"+kb.KnowledgeBase.ID, "", nil)
		if got := ask(4); got != "none" {
			t.Fatalf("after delete: %q", got)
		}
	})
}
