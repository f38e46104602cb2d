package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/testutil/testapp"
)

// TestTablesAPICompatibility drives every Tables operation with
// @botpress/client 1.45.0 (tests/compat/tables.mjs) on both engines: each
// asserted on its result, and the refusals (invalid rows, unknown
// columns, malformed filters, another bot's table, an oversized body)
// with the client's error classes and nothing written.
func TestTablesAPICompatibility(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		a := testapp.Start(t, cfg())
		env, _ := apiSuiteEnv(t, a, "tables")
		out := testapp.RunNode(t, "tables.mjs", env)
		t.Log(summary("tables.mjs", out))
	})
}

// TestSandboxClientTables runs a sandbox JavaScript bot whose `client`
// writes and reads table rows (the Tables API's use cases through
// turns.TablesAPI), and sees a refusal as an Error with its type.
func TestSandboxClientTables(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		ctx := context.Background()
		a := testapp.Start(t, cfg())
		bot, _, _ := codeBot(t, a, `
bot.on.message('*', async ({ event, client }) => {
  const table = 'VisitsTable'
  await client.upsertTableRows({ table, keyColumn: 'user', rows: [{ user: event.userId, count: 1 }] })
  const { rows } = await client.findTableRows({ table, filter: { user: event.userId } })
  const row = (await client.getTableRow({ table, id: rows[0].id })).row
  await client.updateTableRows({ table, rows: [{ id: row.id, count: row.count + 1 }] })
  const after = (await client.getTableRow({ table, id: row.id })).row
  let refused = 'none'
  try { await client.createTableRows({ table, rows: [{ nope: 1 }] }) } catch (e) { refused = e.type + ': ' + e.message }
  const created = await client.createTableRows({ table, rows: [{ user: 'other', count: 5 }] })
  const deleted = await client.deleteTableRows({ table, ids: [created.rows[0].id] })
  await client.createMessage({ conversationId: event.conversationId, payload: { type: 'text',
    text: JSON.stringify({ count: after.count, refused, deleted: deleted.deletedRows }) } })
})`)
		token, err := a.RuntimeAPI().Credentials.MintBotToken(ctx, bot.ID)
		if err != nil {
			t.Fatal(err)
		}
		call := botCaller(t, a, token, bot.ID)
		call("POST", "/v1/tables", `{"name":"VisitsTable","keyColumn":"user","schema":{"type":"object","properties":{"user":{"type":"string"},"count":{"type":"number"}}}}`, nil)
		var u struct{ User struct{ ID string } }
		call("POST", "/v1/chat/users", `{}`, &u)
		var c struct{ Conversation struct{ ID string } }
		call("POST", "/v1/chat/conversations", `{"channel":"dm"}`, &c)
		call("POST", "/v1/chat/messages", `{"conversationId":"`+c.Conversation.ID+`","userId":"`+u.User.ID+`","type":"text","payload":{"text":"hi"}}`, nil)
		var reply struct {
			Count   int
			Refused string
			Deleted int
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			var ms struct {
				Messages []struct {
					Direction string
					Payload   struct{ Text string }
				}
			}
			call("GET", "/v1/chat/messages?conversationId="+c.Conversation.ID, "", &ms)
			if len(ms.Messages) > 0 && ms.Messages[0].Direction == "outgoing" {
				if err := json.Unmarshal([]byte(ms.Messages[0].Payload.Text), &reply); err != nil {
					t.Fatal(err)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no reply: %+v", ms)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if reply.Count != 2 || !strings.HasPrefix(reply.Refused, "InvalidPayload: ") || !strings.Contains(reply.Refused, `"nope"`) || reply.Deleted != 1 {
			t.Fatalf("reply = %+v", reply)
		}
		var found struct{ Rows []map[string]any }
		call("POST", "/v1/tables/VisitsTable/rows/find", `{}`, &found)
		if len(found.Rows) != 1 || found.Rows[0]["count"] != float64(2) {
			t.Fatalf("rows = %v", found.Rows)
		}
	})
}

// TestWorkflowTableCards runs a workflow bot whose tableWrite card upserts
// a row from variables and whose tableRead card reads it back into one.
func TestWorkflowTableCards(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		ctx := context.Background()
		a := testapp.Start(t, cfg())
		botID, _ := workflowBot(t, a, json.RawMessage(`{"workflows": {"main": {"nodes": {"start": {"type": "start", "cards": [
			{"type": "tableWrite", "table": "LeadsTable", "keyColumn": "email", "row": {"email": "{{ event.preview }}", "note": "seen {{ event.preview }}", "length": "{{ event.preview.length }}"}},
			{"type": "tableRead", "table": "LeadsTable", "filter": {"email": "{{ event.preview }}"}, "output": "workflow.lead"},
			{"type": "tableRead", "table": "LeadsTable", "filter": {"email": "nobody"}, "output": "workflow.none"},
			{"type": "message", "payload": "{{ workflow.lead.note }} #{{ workflow.lead.id }} {{ typeof workflow.lead.length }} {{ workflow.lead.length + 1 }} {{ workflow.none === null ? 'none' : 'some' }}"}
		]}}}}}`))
		token, err := a.RuntimeAPI().Credentials.MintBotToken(ctx, botID)
		if err != nil {
			t.Fatal(err)
		}
		call := botCaller(t, a, token, botID)
		call("POST", "/v1/tables", `{"name":"LeadsTable","schema":{"type":"object","properties":{"email":{"type":"string"},"note":{"type":"string"},"length":{"type":"number"}}}}`, nil)
		var u struct{ User struct{ ID string } }
		call("POST", "/v1/chat/users", `{}`, &u)
		var c struct{ Conversation struct{ ID string } }
		call("POST", "/v1/chat/conversations", `{"channel":"dm"}`, &c)
		call("POST", "/v1/chat/messages", `{"conversationId":"`+c.Conversation.ID+`","userId":"`+u.User.ID+`","type":"text","payload":{"text":"ada@example.com"}}`, nil)
		deadline := time.Now().Add(10 * time.Second)
		for {
			var ms struct {
				Messages []struct {
					Direction string
					Payload   struct{ Text string }
				}
			}
			call("GET", "/v1/chat/messages?conversationId="+c.Conversation.ID, "", &ms)
			if len(ms.Messages) > 0 && ms.Messages[0].Direction == "outgoing" {
				if got := ms.Messages[0].Payload.Text; got != "seen ada@example.com #1 number 16 none" {
					t.Fatalf("reply = %q", got)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no reply: %+v", ms)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// TestWorkflowTableWriteRefused runs a workflow bot whose tableWrite card
// writes a column the table does not have: the card fails (a
// workflow_error issue naming the column) and no row is written.
func TestWorkflowTableWriteRefused(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		ctx := context.Background()
		a := testapp.Start(t, cfg())
		botID, _ := workflowBot(t, a, json.RawMessage(`{"workflows": {"main": {"nodes": {"start": {"type": "start", "cards": [
			{"type": "tableWrite", "table": "LeadsTable", "row": {"email": "{{ event.preview }}", "phone": "{{ event.preview }}"}},
			{"type": "message", "payload": "written"}
		]}}}}}`))
		token, err := a.RuntimeAPI().Credentials.MintBotToken(ctx, botID)
		if err != nil {
			t.Fatal(err)
		}
		call := botCaller(t, a, token, botID)
		call("POST", "/v1/tables", `{"name":"LeadsTable","schema":{"type":"object","properties":{"email":{"type":"string"}}}}`, nil)
		var u struct{ User struct{ ID string } }
		call("POST", "/v1/chat/users", `{}`, &u)
		var c struct{ Conversation struct{ ID string } }
		call("POST", "/v1/chat/conversations", `{"channel":"dm"}`, &c)
		call("POST", "/v1/chat/messages", `{"conversationId":"`+c.Conversation.ID+`","userId":"`+u.User.ID+`","type":"text","payload":{"text":"ada@example.com"}}`, nil)
		ws := defaultWorkspace(t, a)
		deadline := time.Now().Add(10 * time.Second)
		for {
			issues := adminCall(t, a, ws, "GET", "/v1/admin/bots/"+botID+"/issues", "")
			if s := toJSON(issues.body); strings.Contains(s, "workflow_error") {
				if !strings.Contains(s, `column \"phone\": no such column`) {
					t.Fatalf("the issue does not name the column: %s", s)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no workflow_error issue: %v", issues.body)
			}
			time.Sleep(50 * time.Millisecond)
		}
		var found struct{ Rows []map[string]any }
		call("POST", "/v1/tables/LeadsTable/rows/find", `{}`, &found)
		if len(found.Rows) != 0 {
			t.Fatalf("rows written: %v", found.Rows)
		}
		var ms struct {
			Messages []struct{ Payload struct{ Text string } }
		}
		call("GET", "/v1/chat/messages?conversationId="+c.Conversation.ID, "", &ms)
		for _, m := range ms.Messages {
			if m.Payload.Text == "written" {
				t.Fatalf("the card after the refused write ran")
			}
		}
	})
}

// botCaller returns a function that calls the API as botID with token,
// expects 200 and decodes the answer into out (when not nil).
func botCaller(t *testing.T, a *app.App, token, botID string) func(method, path, body string, out any) {
	return func(method, path, body string, out any) {
		t.Helper()
		req, _ := http.NewRequest(method, a.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("x-bot-id", botID)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != 200 {
			b, _ := io.ReadAll(res.Body)
			t.Fatalf("%s %s: %s %s", method, path, res.Status, b)
		}
		if out != nil {
			_ = json.NewDecoder(res.Body).Decode(out)
		}
	}
}
