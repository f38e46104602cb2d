package workflow

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/dlclark/regexp2/v2"
	"github.com/dop251/goja/parser"
	"github.com/robfig/cron/v3"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/parley-bots/parley/internal/model"
)

// SchemaJSON is the JSON Schema of bot JSON documents.
//
//go:embed botjson.schema.json
var SchemaJSON []byte

const schemaURL = "https://parley.dev/schemas/bot-json.schema.json"

var (
	schemaOnce sync.Once
	schema     *jsonschema.Schema
	schemaErr  error
)

func compiledSchema() (*jsonschema.Schema, error) {
	schemaOnce.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(SchemaJSON))
		if err != nil {
			schemaErr = err
			return
		}
		c := jsonschema.NewCompiler()
		if err = c.AddResource(schemaURL, doc); err != nil {
			schemaErr = err
			return
		}
		schema, schemaErr = c.Compile(schemaURL)
	})
	return schema, schemaErr
}

// FieldError is one problem of a document, at a JSON pointer (RFC 6901).
type FieldError struct {
	Pointer string `json:"pointer"`
	Message string `json:"message"`
}

// ValidationError lists every problem of a refused document, sorted by
// pointer. It converts to a 400 InvalidPayload model error (ModelError).
type ValidationError struct {
	Errors []FieldError
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("invalid bot JSON: ")
	for i, fe := range e.Errors {
		if i > 0 {
			b.WriteString("; ")
		}
		p := fe.Pointer
		if p == "" {
			p = "/"
		}
		b.WriteString(p + ": " + fe.Message)
	}
	return b.String()
}

// Pointers returns the JSON pointers of the errors, in order.
func (e *ValidationError) Pointers() []string {
	out := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		out[i] = fe.Pointer
	}
	return out
}

// ModelError is the error as the API reports it: 400 InvalidPayload whose
// message names every pointer and whose metadata.errors lists them.
func (e *ValidationError) ModelError() *model.Error {
	errs := make([]any, len(e.Errors))
	for i, fe := range e.Errors {
		errs[i] = map[string]any{"pointer": fe.Pointer, "message": fe.Message}
	}
	return &model.Error{Type: model.ErrInvalidPayload, Message: e.Error(), Metadata: map[string]any{"errors": errs}}
}

// Pointer builds a JSON pointer from reference tokens.
func Pointer(tokens ...any) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		s := fmt.Sprint(t)
		s = strings.ReplaceAll(s, "~", "~0")
		s = strings.ReplaceAll(s, "/", "~1")
		b.WriteString(s)
	}
	return b.String()
}

type errList struct{ errs []FieldError }

func (l *errList) add(ptr, format string, args ...any) {
	l.errs = append(l.errs, FieldError{Pointer: ptr, Message: fmt.Sprintf(format, args...)})
}

// Parse validates a bot JSON document (schema, then semantic rules) and
// compiles it. A refused document gives a *ValidationError.
func Parse(raw []byte) (*Bot, error) {
	sch, err := compiledSchema()
	if err != nil {
		return nil, fmt.Errorf("workflow: schema: %w", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, &ValidationError{Errors: []FieldError{{Pointer: "", Message: "not valid JSON: " + err.Error()}}}
	}
	if err := sch.Validate(inst); err != nil {
		var ve *jsonschema.ValidationError
		if !errorsAs(err, &ve) {
			return nil, &ValidationError{Errors: []FieldError{{Pointer: "", Message: err.Error()}}}
		}
		return nil, &ValidationError{Errors: schemaErrors(ve)}
	}
	var doc Document
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&doc); err != nil {
		return nil, &ValidationError{Errors: []FieldError{{Pointer: "", Message: err.Error()}}}
	}
	var l errList
	b := compile(&doc, &l)
	if len(l.errs) > 0 {
		sort.SliceStable(l.errs, func(i, j int) bool { return l.errs[i].Pointer < l.errs[j].Pointer })
		return nil, &ValidationError{Errors: l.errs}
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, &ValidationError{Errors: []FieldError{{Pointer: "", Message: err.Error()}}}
	}
	b.Raw = json.RawMessage(compact.Bytes())
	return b, nil
}

func errorsAs(err error, target **jsonschema.ValidationError) bool {
	ve, ok := err.(*jsonschema.ValidationError)
	if ok {
		*target = ve
	}
	return ok
}

var printer = message.NewPrinter(language.English)

// schemaErrors flattens a schema validation error to its leaves, one per
// instance location and message. Branches of oneOf/if that failed only
// because another branch applies are kept: they are what the author must fix.
func schemaErrors(ve *jsonschema.ValidationError) []FieldError {
	var out []FieldError
	seen := map[string]bool{}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			ptr := Pointer(anySlice(e.InstanceLocation)...)
			msg := e.ErrorKind.LocalizedString(printer)
			if !seen[ptr+"\x00"+msg] {
				seen[ptr+"\x00"+msg] = true
				out = append(out, FieldError{Pointer: ptr, Message: msg})
			}
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Pointer < out[j].Pointer })
	return out
}

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, x := range s {
		out[i] = x
	}
	return out
}

// scopes of variables that live in the runtime's states.
var stateScopes = []string{"user", "conversation", "bot"}

// compile runs the semantic checks and builds the Bot.
func compile(doc *Document, l *errList) *Bot {
	b := &Bot{Doc: doc, vars: map[string]map[string]*Variable{}, flowVars: map[string]map[string]*Variable{}}
	for _, s := range stateScopes {
		b.vars[s] = map[string]*Variable{}
	}
	for _, id := range sortedKeys(doc.Workflows) {
		b.flowVars[id] = map[string]*Variable{}
	}
	for i := range doc.Variables {
		v := &doc.Variables[i]
		ptr := Pointer("variables", i)
		switch v.Scope {
		case "":
			l.add(ptr+"/scope", "scope is required for a top-level variable (user, conversation, bot or workflow)")
			continue
		case "workflow":
			fv, ok := b.flowVars[v.Workflow]
			if v.Workflow == "" {
				l.add(ptr+"/workflow", "a workflow variable names its workflow")
				continue
			} else if !ok {
				l.add(ptr+"/workflow", "unknown workflow %q", v.Workflow)
				continue
			}
			declare(fv, v, ptr, l)
		default:
			if v.Input || v.Output {
				l.add(ptr, "only workflow variables can be inputs or outputs")
			}
			declare(b.vars[v.Scope], v, ptr, l)
		}
	}
	for _, id := range sortedKeys(doc.Workflows) {
		f := doc.Workflows[id]
		fp := Pointer("workflows", id)
		for i := range f.Variables {
			v := &f.Variables[i]
			ptr := fp + Pointer("variables", i)
			if v.Scope != "" && v.Scope != "workflow" {
				l.add(ptr+"/scope", "variables of a workflow have the workflow scope")
				continue
			}
			v.Scope, v.Workflow = "workflow", id
			declare(b.flowVars[id], v, ptr, l)
		}
		var starts []string
		for _, nid := range sortedKeys(f.Nodes) {
			if f.Nodes[nid].Type == NodeStart {
				starts = append(starts, nid)
			}
		}
		switch len(starts) {
		case 0:
			l.add(fp+"/nodes", "a workflow needs exactly one start node; there is none")
		case 1:
			f.start = starts[0]
		default:
			for _, s := range starts[1:] {
				l.add(fp+Pointer("nodes", s, "type"), "a workflow needs exactly one start node; %q is one already", starts[0])
			}
			f.start = starts[0]
		}
		for _, nid := range sortedKeys(f.Nodes) {
			n := f.Nodes[nid]
			np := fp + Pointer("nodes", nid)
			if n.Next != "" {
				b.checkNode(id, n.Next, np+"/next", l)
			}
			for ci, c := range n.Cards {
				b.checkCard(id, c, np+Pointer("cards", ci), l)
			}
		}
	}
	for i := range doc.Triggers {
		t := &doc.Triggers[i]
		ptr := Pointer("triggers", i)
		f, ok := doc.Workflows[t.Workflow]
		if !ok {
			l.add(ptr+"/workflow", "unknown workflow %q", t.Workflow)
			continue
		}
		if t.Node == "" {
			t.Node = f.start
		} else if _, ok := f.Nodes[t.Node]; !ok {
			l.add(ptr+"/node", "unknown node %q in workflow %q", t.Node, t.Workflow)
		}
		if t.ID == "" {
			t.ID = fmt.Sprintf("trigger-%d", i)
		}
		switch t.Type {
		case TriggerIntent:
			if _, ok := doc.Intents[t.Intent]; !ok {
				l.add(ptr+"/intent", "unknown intent %q", t.Intent)
			}
		case TriggerSchedule:
			s, err := ParseCron(t.Cron)
			if err != nil {
				l.add(ptr+"/cron", "%v", err)
			} else {
				b.schedules = append(b.schedules, Schedule{Trigger: t, Spec: s})
			}
		}
	}
	for _, name := range sortedKeys(doc.Hooks) {
		checkJS(doc.Hooks[name], true, Pointer("hooks", name), l)
	}
	for _, name := range sortedKeys(doc.Actions) {
		checkJS(doc.Actions[name].Code, true, Pointer("actions", name, "code"), l)
	}
	b.intents = newIntentIndex(doc.Intents)
	return b
}

func declare(m map[string]*Variable, v *Variable, ptr string, l *errList) {
	if _, dup := m[v.Name]; dup {
		l.add(ptr+"/name", "variable %q is declared twice in this scope", v.Name)
		return
	}
	if v.Type == "pattern" {
		if _, err := regexp2.Compile(v.Pattern, regexp2.ECMAScript); err != nil {
			l.add(ptr+"/pattern", "not a valid regular expression: %v", err)
			return
		}
	}
	if v.Default != nil {
		if _, err := coerce(v, v.Default); err != nil {
			l.add(ptr+"/default", "%v", err)
			return
		}
	}
	m[v.Name] = v
}

func (b *Bot) checkNode(flow, node, ptr string, l *errList) {
	if _, ok := b.Doc.Workflows[flow].Nodes[node]; !ok {
		l.add(ptr, "unknown node %q in workflow %q", node, flow)
	}
}

// checkVar checks a variable reference "scope.name".
func (b *Bot) checkVar(flow, ref, ptr string, l *errList) {
	// Variables need no declaration (undeclared ones are untyped); the
	// schema checked the scope.
	if !strings.Contains(ref, ".") {
		l.add(ptr, "a variable is written scope.name")
	}
}

func (b *Bot) checkCard(flow string, c *Card, ptr string, l *errList) {
	switch c.Type {
	case CardMessage:
		checkMessage(c.Payload, ptr+"/payload", l)
	case CardCode:
		checkJS(c.Code, true, ptr+"/code", l)
	case CardSet:
		b.checkVar(flow, c.Variable, ptr+"/variable", l)
		if c.Expression != "" {
			checkJS(c.Expression, false, ptr+"/expression", l)
		}
		if len(c.Value) > 0 {
			var v any
			_ = json.Unmarshal(c.Value, &v)
			checkTemplates(v, ptr+"/value", l)
		}
	case CardLog:
		checkTemplate(c.Message, ptr+"/message", l)
	case CardHandoff:
		checkTemplate(c.Reason, ptr+"/reason", l)
	case CardAction:
		if _, ok := b.Doc.Actions[c.Action]; !ok {
			l.add(ptr+"/action", "unknown action %q", c.Action)
		}
		checkTemplates(c.Input, ptr+"/input", l)
		if len(c.Output) > 0 {
			_ = json.Unmarshal(c.Output, &c.outputVar)
			b.checkVar(flow, c.outputVar, ptr+"/output", l)
		}
	case CardTableRead, CardTableWrite:
		if c.Table == "" {
			l.add(ptr+"/table", "a table name is required")
		}
		checkTemplates(orEmptyAny(c.Filter), ptr+"/filter", l)
		checkTemplates(orEmptyAny(c.Row), ptr+"/row", l)
		if c.Type == CardTableWrite && len(c.Row) == 0 {
			l.add(ptr+"/row", "a row is required")
		}
		if c.Type == CardTableRead {
			if len(c.Output) == 0 {
				l.add(ptr+"/output", "an output variable is required")
			} else {
				_ = json.Unmarshal(c.Output, &c.outputVar)
				b.checkVar(flow, c.outputVar, ptr+"/output", l)
			}
		}
	case CardQueryKB:
		checkTemplate(c.Question, ptr+"/question", l)
		if len(c.Output) > 0 {
			_ = json.Unmarshal(c.Output, &c.outputVar)
			b.checkVar(flow, c.outputVar, ptr+"/output", l)
		}
	case CardExpression:
		checkJS(c.Condition, false, ptr+"/condition", l)
		b.checkNode(flow, c.To, ptr+"/to", l)
	case CardAlways:
		b.checkNode(flow, c.To, ptr+"/to", l)
	case CardChoice, CardCapture:
		if c.Variable != "" {
			b.checkVar(flow, c.Variable, ptr+"/variable", l)
		}
		if len(c.Prompt) > 0 {
			checkMessage(c.Prompt, ptr+"/prompt", l)
		}
		checkTemplate(c.RetryMsg, ptr+"/retryMessage", l)
		if c.Validation != "" {
			checkJS(c.Validation, false, ptr+"/validation", l)
		}
		for i, o := range c.Options {
			if o.To != "" {
				if c.Type != CardChoice {
					l.add(ptr+Pointer("options", i, "to"), "only choice cards transition per option")
				} else {
					b.checkNode(flow, o.To, ptr+Pointer("options", i, "to"), l)
				}
			}
		}
		for _, f := range []struct{ v, name string }{{c.OnFailure, "onFailure"}, {c.OnCancel, "onCancel"}} {
			if f.v != "" {
				b.checkNode(flow, f.v, ptr+"/"+f.name, l)
			}
		}
	case CardCall:
		callee, ok := b.Doc.Workflows[c.Workflow]
		if !ok {
			l.add(ptr+"/workflow", "unknown workflow %q", c.Workflow)
			return
		}
		_ = callee
		for _, k := range sortedKeys(c.Input) {
			d := b.flowVars[c.Workflow][k]
			if d == nil || !d.Input {
				l.add(ptr+Pointer("input", k), "workflow %q has no input variable %q", c.Workflow, k)
			}
		}
		checkTemplates(c.Input, ptr+"/input", l)
		if len(c.Output) > 0 {
			_ = json.Unmarshal(c.Output, &c.outputMap)
			for _, k := range sortedKeys(c.outputMap) {
				d := b.flowVars[c.Workflow][k]
				if d == nil || !d.Output {
					l.add(ptr+Pointer("output", k), "workflow %q has no output variable %q", c.Workflow, k)
				}
				b.checkVar(flow, c.outputMap[k], ptr+Pointer("output", k), l)
			}
		}
	}
}

// checkMessage checks a message: a template string or a payload object
// whose strings are templates.
func checkMessage(raw json.RawMessage, ptr string, l *errList) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		l.add(ptr, "%v", err)
		return
	}
	checkTemplates(v, ptr, l)
}

// checkTemplates checks every string of a JSON value as a template.
func checkTemplates(v any, ptr string, l *errList) {
	switch x := v.(type) {
	case string:
		checkTemplate(x, ptr, l)
	case map[string]any:
		for _, k := range sortedKeys(x) {
			checkTemplates(x[k], ptr+Pointer(k), l)
		}
	case []any:
		for i, it := range x {
			checkTemplates(it, ptr+Pointer(i), l)
		}
	}
}

func checkTemplate(s, ptr string, l *errList) {
	parts, err := parseTemplate(s)
	if err != nil {
		l.add(ptr, "%v", err)
		return
	}
	for _, p := range parts {
		if p.expr {
			checkJS(p.text, false, ptr, l)
		}
	}
}

// checkJS parses code as the body of an async function (body) or an
// expression.
func checkJS(src string, body bool, ptr string, l *errList) {
	var wrapped string
	if body {
		wrapped = "(async function () {\n" + src + "\n})"
	} else {
		wrapped = "(function () { return (\n" + src + "\n); })"
	}
	if _, err := parser.ParseFile(nil, "card.js", wrapped, 0); err != nil {
		msg := err.Error()
		if el, ok := err.(parser.ErrorList); ok && len(el) > 0 {
			msg = el[0].Message + " at line " + strconv.Itoa(el[0].Position.Line-1) + " column " + strconv.Itoa(el[0].Position.Column)
		}
		l.add(ptr, "JavaScript syntax error: %s", msg)
	}
}

// ParseCron parses a schedule: five fields (minute hour day month weekday),
// or six with seconds first, or a descriptor (@hourly, @every 1m, ...).
func ParseCron(s string) (cron.Schedule, error) {
	p := cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
	sch, err := p.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("invalid cron schedule: %v", err)
	}
	return sch, nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
