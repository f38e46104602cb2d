package app_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/testutil/testapp"
)

// TestFilesAPICompatibility drives every Files operation with
// @botpress/client 1.45.0 (tests/compat/files-api.mjs) on both engines:
// each asserted on its result, with bot keys, bot tokens and members'
// tokens, and refused with the client's error classes (no credential,
// another bot's ids, unknown ids, oversized bodies, a used upload URL)
// with nothing stored; indexing of text, Markdown, HTML and PDF; search
// by shared stems in English and French.
func TestFilesAPICompatibility(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		a := testapp.Start(t, cfg())
		env, _ := apiSuiteEnv(t, a, "files")
		out := testapp.RunNode(t, "files-api.mjs", env)
		t.Log(summary("files-api.mjs", out))
	})
}

// TestSandboxClientSearchesFiles: bot code's client.searchFiles finds the
// passage of the bot's indexed file that answers a user's question (the
// words differ, the stems match), and the bot replies with it.
func TestSandboxClientSearchesFiles(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		ctx := context.Background()
		a := testapp.Start(t, cfg())
		bot, _, _ := codeBot(t, a, `
bot.on.message('*', async ({ event, client }) => {
  const { passages } = await client.searchFiles({ query: event.payload.text, limit: 1, includeBreadcrumb: true })
  const best = passages[0]
  const kb = event.kb ? event.kb.included.map((k) => k.name).join(',') + '|' + event.kb.results.map((r) => r.file.key + ':' + r.content).join(',') : 'no kb'
  await client.createMessage({ conversationId: event.conversationId, payload: { type: 'text',
    text: (best ? best.context[0].text + ': ' + best.content + ' (' + best.file.key + ')' : 'no answer') + ' / ' + kb } })
})`)
		token, err := a.RuntimeAPI().Credentials.MintBotToken(ctx, bot.ID)
		if err != nil {
			t.Fatal(err)
		}
		call := botCaller(t, a, token, bot.ID)
		doc := "# Help\n\n## Opening hours\n\nThe shop opens every weekday at nine.\n\n## Deliveries\n\nParcels are delivered within three days.\n"
		var up struct {
			File struct{ ID, UploadURL string }
		}
		call("PUT", "/v1/files", `{"key":"help.md","size":`+strconv.Itoa(len(doc))+`,"index":true}`, &up)
		res, err := http.DefaultClient.Do(mustRequest(t, "PUT", up.File.UploadURL, doc))
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("upload: %v %v", res, err)
		}
		res.Body.Close()
		deadline := time.Now().Add(10 * time.Second)
		for {
			var f struct{ File struct{ Status string } }
			call("GET", "/v1/files/"+up.File.ID, "", &f)
			if f.File.Status == "indexing_completed" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("not indexed: %s", f.File.Status)
			}
			time.Sleep(50 * time.Millisecond)
		}
		var u struct{ User struct{ ID string } }
		call("POST", "/v1/chat/users", `{"tags":{}}`, &u)
		var c struct{ Conversation struct{ ID string } }
		call("POST", "/v1/chat/conversations", `{"channel":"dm","tags":{}}`, &c)
		ask := func(question, want string) {
			t.Helper()
			call("POST", "/v1/chat/messages", `{"conversationId":"`+c.Conversation.ID+`","userId":"`+u.User.ID+`","type":"text","payload":{"text":"`+question+`"},"tags":{}}`, nil)
			deadline := time.Now().Add(10 * time.Second)
			for {
				var ms struct {
					Messages []struct {
						Direction string
						Payload   struct{ Text string }
					}
				}
				call("GET", "/v1/chat/messages?conversationId="+c.Conversation.ID, "", &ms)
				if len(ms.Messages) > 1 && ms.Messages[0].Direction == "outgoing" && strings.Contains(ms.Messages[1].Payload.Text, question) {
					if got := ms.Messages[0].Payload.Text; got != want {
						t.Fatalf("reply %q, want %q", got, want)
					}
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("no reply: %+v", ms)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		// Without knowledge bases, event.kb is absent.
		ask("when is the parcel delivery?", "Help > Deliveries: Parcels are delivered within three days. (help.md) / no kb")
		// With one (the files tagged kb=help), event.kb lists it and its passages.
		call("PUT", "/v1/files/"+up.File.ID, `{"tags":{"kb":"help"}}`, nil)
		call("POST", "/v1/files/knowledge-bases", `{"name":"Help center","tags":{"kb":"help"}}`, nil)
		call("POST", "/v1/files/knowledge-bases", `{"name":"Empty","tags":{"kb":"none"}}`, nil)
		ask("what are the shop opening hours?", "Help > Opening hours: The shop opens every weekday at nine. (help.md) / "+
			"Help center,Empty|help.md:The shop opens every weekday at nine.")
	})
}

func mustRequest(t *testing.T, method, url, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return req
}
