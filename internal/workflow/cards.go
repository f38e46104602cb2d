package workflow

import (
	"encoding/json"
	"errors"
	"strings"
)

// Cards: what a node does (send, capture, prompt), and the answer to a
// capture that waited.

func (r *run) send(p map[string]any) error {
	if !r.in.HasConversation {
		_, err := r.req("log", "level", "warn", "message", "message card skipped: this turn has no conversation (schedule trigger)")
		return err
	}
	if _, err := r.req("send", "payload", p); err != nil {
		return err
	}
	r.out.Sent++
	return nil
}

// card runs one card; stop means the turn is over (waiting or ended).
func (r *run) card(c *Card) (stop bool, err error) {
	f := r.top()
	switch c.Type {
	case CardMessage:
		p, err := r.renderMessage(c.Payload)
		if err == nil {
			err = r.send(p)
		}
		if err != nil {
			return false, err
		}
	case CardCode:
		if _, err := r.req("exec", "src", c.Code); err != nil {
			return false, err
		}
	case CardSet:
		var v any
		if c.Expression != "" {
			raw, err := r.eval(c.Expression, nil, false)
			if err != nil {
				return false, err
			}
			_ = json.Unmarshal(raw, &v)
		} else {
			_ = json.Unmarshal(c.Value, &v)
			if v, err = r.renderValue(v); err != nil {
				return false, err
			}
		}
		if err := r.set(c.Variable, v); err != nil {
			return false, err
		}
	case CardLog:
		msg, err := r.renderString(c.Message)
		if err != nil {
			return false, err
		}
		level := c.Level
		if level == "" {
			level = "info"
		}
		if _, err := r.req("log", "level", level, "message", msg); err != nil {
			return false, err
		}
	case CardAction:
		in, err := r.renderValue(orEmptyAny(c.Input))
		if err != nil {
			return false, err
		}
		raw, err := r.req("action", "name", c.Action, "input", in)
		if err != nil {
			return false, err
		}
		if c.outputVar != "" {
			var out any
			_ = json.Unmarshal(raw, &out)
			if err := r.set(c.outputVar, out); err != nil {
				return false, err
			}
		}
	case CardTableRead:
		filter, err := r.renderValue(orEmptyAny(c.Filter))
		if err != nil {
			return false, err
		}
		raw, err := r.req("client", "name", "findTableRows", "input", map[string]any{"table": c.Table, "filter": filter, "limit": 1})
		if err != nil {
			return false, err
		}
		var res struct{ Rows []any }
		_ = json.Unmarshal(raw, &res)
		var row any
		if len(res.Rows) > 0 {
			row = res.Rows[0]
		}
		if err := r.set(c.outputVar, row); err != nil {
			return false, err
		}
	case CardTableWrite:
		row, err := r.renderValue(orEmptyAny(c.Row))
		if err != nil {
			return false, err
		}
		in := map[string]any{"table": c.Table, "rows": []any{row}}
		if c.KeyColumn != "" {
			in["keyColumn"] = c.KeyColumn
		}
		if _, err := r.req("client", "name", "upsertTableRows", "input", in); err != nil {
			return false, err
		}
	case CardQueryKB:
		if err := r.queryKB(c); err != nil {
			return false, err
		}
	case CardHandoff:
		reason, err := r.renderString(c.Reason)
		if err != nil {
			return false, err
		}
		if _, err := r.req("client", "name", "requestHandoff", "input", map[string]any{"reason": reason}); err != nil {
			return false, err
		}
	case CardExpression:
		ok, err := r.truthy(c.Condition, nil)
		if err != nil {
			return false, err
		}
		if ok {
			return false, r.enter(c.To)
		}
	case CardAlways:
		return false, r.enter(c.To)
	case CardCapture, CardChoice:
		if c.SkipIfSet && c.Variable != "" {
			v, err := r.get(c.Variable)
			if err != nil {
				return false, err
			}
			if v != nil && v != "" {
				break
			}
		}
		if err := r.prompt(c); err != nil {
			return false, err
		}
		r.d.Waiting, r.d.Attempts = WaitCapture, 0
		return true, nil
	case CardWait:
		f.Card++
		r.d.Waiting = WaitInput
		return true, nil
	case CardTimeout:
		r.d.Timeout = c.Minutes
	case CardCall:
		in, err := r.renderValue(orEmptyAny(c.Input))
		if err != nil {
			return false, err
		}
		inputs, _ := in.(map[string]any)
		for k, v := range inputs {
			if inputs[k], err = coerce(r.b.flowVars[c.Workflow][k], v); err != nil {
				return false, &botError{code: IssueCardError, msg: err.Error()}
			}
		}
		return false, r.push(c.Workflow, r.b.Doc.Workflows[c.Workflow].start, inputs)
	case CardEnd:
		return true, r.end(true)
	}
	f.Card++
	return false, nil
}

func orEmptyAny(m map[string]any) any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func captureKind(c *Card) string {
	if c.Type == CardChoice {
		return "choice"
	}
	return c.Kind
}

func captureOptions(c *Card) []Option {
	if captureKind(c) == "boolean" && len(c.Options) == 0 {
		return []Option{{Label: "Yes", Value: "yes"}, {Label: "No", Value: "no"}}
	}
	return c.Options
}

// prompt sends a capture's question; choices become a choice message.
func (r *run) prompt(c *Card) error { return r.promptText(c, "") }

// promptText sends the prompt, or the retry text instead of the prompt's
// text when there is one (with the options again, if any).
func (r *run) promptText(c *Card, retry string) error {
	raw := c.Prompt
	if retry != "" {
		raw, _ = json.Marshal(retry)
	}
	if len(raw) == 0 {
		return nil
	}
	p, err := r.renderMessage(raw)
	if err != nil {
		return err
	}
	if opts := captureOptions(c); len(opts) > 0 && p["type"] == "text" {
		var os []any
		for _, o := range opts {
			label, err := r.renderString(o.Label)
			if err != nil {
				return err
			}
			os = append(os, map[string]any{"label": label, "value": o.value()})
		}
		p = map[string]any{"type": "choice", "text": p["text"], "options": os}
	}
	return r.send(p)
}

// resume feeds the message to what the dialog waits for.
func (r *run) resume() error {
	if r.d.Waiting == WaitInput {
		r.d.Waiting = ""
		return r.exec()
	}
	f := r.top()
	node := r.b.Doc.Workflows[f.Workflow].Nodes[f.Node]
	if f.Card >= len(node.Cards) {
		r.d.Waiting = ""
		return r.exec()
	}
	c := node.Cards[f.Card]
	r.ptr = Pointer("workflows", f.Workflow, "nodes", f.Node, "cards", f.Card)
	if err := r.answer(c); err != nil {
		if err == errWait {
			return nil
		}
		return r.handle(err)
	}
	return r.exec()
}

// answer handles the user's answer to a capture or choice card.
func (r *run) answer(c *Card) error {
	f := r.top()
	n := normalize(r.in.Text)
	for _, p := range c.Cancel {
		if normalize(p) == n && n != "" {
			r.d.Waiting, r.d.Attempts = "", 0
			if c.OnCancel != "" {
				return r.enter(c.OnCancel)
			}
			return r.end(false)
		}
	}
	kind := captureKind(c)
	opts := captureOptions(c)
	v, ok := extract(kind, r.in.Text, r.in.Value, opts, r.in.Now)
	if ok && c.Validation != "" {
		valid, err := r.truthy(c.Validation, v)
		if err != nil {
			return err
		}
		ok = valid
	}
	if ok && c.Variable != "" {
		scope, name, _ := strings.Cut(c.Variable, ".")
		if _, err := coerce(r.b.decl(f.Workflow, scope, name), v); err != nil {
			ok = false
		}
	}
	if ok {
		r.d.Waiting, r.d.Attempts = "", 0
		if c.Variable != "" {
			if err := r.set(c.Variable, v); err != nil {
				return err
			}
		}
		if c.Type == CardChoice {
			if o, found := matchOption(opts, r.in.Value, r.in.Text); found && o.To != "" {
				return r.enter(o.To)
			}
		}
		f.Card++
		return nil
	}
	r.d.Attempts++
	retries := 2
	if c.Retries != nil {
		retries = *c.Retries
	}
	if r.d.Attempts > retries {
		r.d.Waiting, r.d.Attempts = "", 0
		if c.OnFailure != "" {
			return r.enter(c.OnFailure)
		}
		f.Card++
		return nil
	}
	if err := r.promptText(c, c.RetryMsg); err != nil {
		return err
	}
	// Still waiting: the turn ends here.
	r.d.Waiting = WaitCapture
	return errWait
}

// errWait stops exec after a retry prompt.
var errWait = errors.New("waiting")
