package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/integrations"
	"github.com/parley-bots/parley/internal/testutil/faketelegram"
	"github.com/parley-bots/parley/internal/testutil/testapp"
)

// telegramJSBot is a sandbox JavaScript bot for the Telegram integration:
// it echoes with the event's integration name, answers "menu" with a
// choice and "me" with the output of the integration's getMe action.
const telegramJSBot = `bot.on.message('*', async ({ message, client, event }) => {
  const text = message.payload.text
  const reply = (payload) => client.createMessage({ conversationId: message.conversationId, payload })
  if (text === 'menu') {
    return reply({ type: 'choice', text: 'Pick one', options: [{ label: 'Red', value: 'red' }, { label: 'Blue', value: 'blue' }] })
  }
  if (text === 'me') {
    const r = await client.callAction({ type: 'telegram:getMe', input: {} })
    return reply({ type: 'text', text: 'me: ' + r.output.username })
  }
  await reply({ type: 'text', text: 'js[' + event.integration + ']: ' + text })
})`

var (
	installedWebhook     = regexp.MustCompile(`webhook (\S+)`)
	installedIntegration = regexp.MustCompile(`integration telegram@\S+ \((\S+)\)`)
)

// installTelegram runs integrations/telegram/install.mjs (the documented
// setup: build, createIntegration or updateIntegration, updateBot) against
// the server and returns the integration's id it printed.
func installTelegram(t *testing.T, a *app.App, ws, botID string, tg *faketelegram.Server) string {
	t.Helper()
	out := testapp.RunNode(t, filepath.Join("..", "..", "integrations", "telegram", "install.mjs"), map[string]string{
		"PARLEY_URL": a.URL, "TOKEN": a.AdminToken, "WORKSPACE_ID": ws, "BOT_ID": botID,
		"TELEGRAM_BOT_TOKEN": tg.Token, "TELEGRAM_API_BASE_URL": tg.URL, "OUT_DIR": t.TempDir()})
	t.Log(strings.TrimSpace(out))
	m, id := installedWebhook.FindStringSubmatch(out), installedIntegration.FindStringSubmatch(out)
	if m == nil || id == nil || !strings.Contains(out, "status registered") {
		t.Fatalf("install.mjs did not register the integration:\n%s", out)
	}
	if url, secret := tg.Webhook(); url != m[1] || secret == "" {
		t.Fatalf("register: Telegram's webhook is %q (secret %q), want the bot's webhook URL %q with a secret", url, secret, m[1])
	}
	return id[1]
}

// postUpdate POSTs an update to the webhook as Telegram does, again until
// it is answered 200 (Telegram retries an update it could not deliver).
func postUpdate(tg *faketelegram.Server, update map[string]any) error {
	url, secret := tg.Webhook()
	body, _ := json.Marshal(update)
	deadline := time.Now().Add(60 * time.Second)
	for {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return nil
			}
			err = fmt.Errorf("status %d", res.StatusCode)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("update %v: %v", update["update_id"], err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sentTo returns the texts of the sendMessage calls to chat, in order.
func sentTo(tg *faketelegram.Server, chat int64) []string {
	var out []string
	for _, c := range tg.Calls("sendMessage") {
		if fmt.Sprint(c.Params["chat_id"]) == fmt.Sprint(chat) {
			s, _ := c.Params["text"].(string)
			out = append(out, s)
		}
	}
	return out
}

func waitSent(t *testing.T, tg *faketelegram.Server, chat int64, text string) map[string]any {
	t.Helper()
	var found map[string]any
	waitFor(t, "sendMessage "+text+" to chat "+fmt.Sprint(chat), 30*time.Second, func() bool {
		for _, c := range tg.Calls("sendMessage") {
			if fmt.Sprint(c.Params["chat_id"]) == fmt.Sprint(chat) && c.Params["text"] == text {
				found = c.Params
				return true
			}
		}
		return false
	})
	return found
}

// TestTelegramEndToEnd: Parley's Telegram integration (integrations/telegram,
// built and installed with its install.mjs) on an SDK bot and a sandbox
// JavaScript bot, against a fake Telegram Bot API on loopback: register
// sets the webhook, an update reaches the bot on the telegram integration
// and the reply is a sendMessage to the chat, a choice is inline keyboard
// buttons, callAction returns the action's output; then 100 updates over 5
// chats while the integration's process is SIGKILLed: every update is
// answered, in order per chat, and the duplicates are counted.
func TestTelegramEndToEnd(t *testing.T) {
	sdkBot := buildCompat(t, "telegrambot.cjs")
	engines(t, func(t *testing.T, cfg func() app.Config) {
		start := time.Now()
		a := testapp.Start(t, cfg())
		ws := defaultWorkspace(t, a)
		admin := map[string]string{"x-workspace-id": ws}
		tg := faketelegram.Start(t, "123456:TEST")
		createBot := func(name, code string) string {
			codeJSON, _ := json.Marshal(code)
			var bot struct{ Bot struct{ ID string } }
			apiCall(t, a.URL, a.AdminToken, admin, "POST", "/v1/admin/bots", `{"name":"`+name+`","code":`+string(codeJSON)+`}`, &bot)
			return bot.Bot.ID
		}
		sdkCode, err := os.ReadFile(sdkBot)
		if err != nil {
			t.Fatal(err)
		}
		conversation := func(botID string, chat, user, msgID int64, text, want string) {
			t.Helper()
			if err := postUpdate(tg, faketelegram.Text(chat, user, msgID, text)); err != nil {
				t.Fatal(err)
			}
			waitSent(t, tg, chat, want)
		}
		check := func(botID, prefix string, chat int64) {
			t.Helper()
			conversation(botID, chat, chat+1, chat*100+1, "hello", prefix+"[telegram]: hello")
			conversation(botID, chat, chat+1, chat*100+2, "me", "me: parley_test_bot")
			menu := func() bool {
				for _, c := range tg.Calls("sendMessage") {
					if fmt.Sprint(c.Params["chat_id"]) == fmt.Sprint(chat) && c.Params["text"] == "Pick one" {
						kb, _ := json.Marshal(c.Params["reply_markup"])
						return string(kb) == `{"inline_keyboard":[[{"callback_data":"red","text":"Red"}],[{"callback_data":"blue","text":"Blue"}]]}`
					}
				}
				return false
			}
			if err := postUpdate(tg, faketelegram.Text(chat, chat+1, chat*100+3, "menu")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the choice as inline keyboard buttons", 30*time.Second, menu)
			// A click on a button is the option's value.
			if err := postUpdate(tg, faketelegram.Click(chat, chat+1, 1, "cb-"+fmt.Sprint(chat), "red")); err != nil {
				t.Fatal(err)
			}
			waitSent(t, tg, chat, prefix+"[telegram]: red")
		}

		// (a) the SDK bot.
		sdkID := createBot("telegram-sdk", string(sdkCode))
		installTelegram(t, a, ws, sdkID, tg)
		check(sdkID, "sdk", 500)

		// (b) the sandbox JavaScript bot (install.mjs now updates the
		// published integration).
		jsID := createBot("telegram-js", telegramJSBot)
		integrationID := installTelegram(t, a, ws, jsID, tg)
		check(jsID, "js", 600)
		t.Logf("functional part: %s", time.Since(start).Round(time.Millisecond))

		// The integration's process killed while 100 updates arrive over 5
		// chats (each chat's updates one after the other, as Telegram
		// sends them).
		const chats, perChat = 5, 20
		var pid int
		waitFor(t, "the integration's process", 20*time.Second, func() bool {
			pid = a.BotProcesses().PID(integrations.BundleOwner(integrationID))
			return pid != 0
		})
		var delivered sync.WaitGroup
		var mu sync.Mutex
		var sent int
		errs := make(chan error, chats)
		loadStart := time.Now()
		for c := int64(1); c <= chats; c++ {
			delivered.Add(1)
			go func() {
				defer delivered.Done()
				for i := 1; i <= perChat; i++ {
					u := faketelegram.Text(c, c+10, 10000+c*100+int64(i), fmt.Sprintf("c%d-%d", c, i))
					u["update_id"] = 100000 + c*100 + int64(i)
					if err := postUpdate(tg, u); err != nil {
						errs <- err
						return
					}
					mu.Lock()
					sent++
					mu.Unlock()
				}
			}()
		}
		waitFor(t, "a third of the updates", 60*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return sent >= chats*perChat/3 })
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		delivered.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		dups := 0
		for c := int64(1); c <= chats; c++ {
			want := fmt.Sprintf("js[telegram]: c%d-%d", c, perChat)
			waitSent(t, tg, c, want)
		}
		time.Sleep(500 * time.Millisecond) // nothing more comes
		for c := int64(1); c <= chats; c++ {
			got := sentTo(tg, c)
			seen := map[string]bool{}
			var order []string
			chatDups := 0
			for i, s := range got {
				if seen[s] {
					// The one window left: the kill between Telegram's
					// sendMessage and the ack. The delivery is retried
					// before the next message of the chat, so a
					// duplicate follows its first send, once per chat
					// at most (one kill, one delivery in flight).
					if got[i-1] != s {
						t.Fatalf("chat %d: %q sent again after other replies: %q", c, s, got)
					}
					dups++
					chatDups++
					continue
				}
				seen[s] = true
				order = append(order, s)
			}
			var want []string
			for i := 1; i <= perChat; i++ {
				want = append(want, fmt.Sprintf("js[telegram]: c%d-%d", c, i))
			}
			if chatDups > 1 {
				t.Fatalf("chat %d: %d replies sent twice, want at most the one in flight at the kill: %q", c, chatDups, got)
			}
			if strings.Join(order, "|") != strings.Join(want, "|") {
				t.Fatalf("chat %d: replies %q, want every update answered in order %q", c, got, want)
			}
		}
		if now := a.BotProcesses().PID(integrations.BundleOwner(integrationID)); now == pid || now == 0 {
			t.Fatalf("the integration's process %d was not replaced (now %d)", pid, now)
		}
		t.Logf("TELEGRAM-FIGURES %d updates over %d chats, integration process SIGKILLed: all answered in order, %d duplicate sendMessage; load %s, total %s",
			chats*perChat, chats, dups, time.Since(loadStart).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	})
}
