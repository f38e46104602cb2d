// Package workflow runs workflow bots: a bot JSON document (docs/bot-json.md)
// of workflows, nodes and cards, triggers, variables, hooks, actions and
// intents. Parse validates a document against the embedded JSON Schema and
// semantic rules, naming every error by its JSON pointer; the engine runs a
// turn deterministically (dialog stack, captures, transitions, variables)
// and evaluates JavaScript through the runtime package's driven turns, so
// workflow bots share the sandbox, event object, state, logs and issues of
// code-first bots. The package never touches the store: package turns loads
// and persists the Dialog.
package workflow

import "encoding/json"

// Document is a bot JSON document.
type Document struct {
	Schema         string             `json:"$schema,omitempty"`
	Version        int                `json:"version,omitempty"`
	Name           string             `json:"name,omitempty"`
	Description    string             `json:"description,omitempty"`
	Settings       Settings           `json:"settings,omitzero"`
	Variables      []Variable         `json:"variables,omitempty"`
	Workflows      map[string]*Flow   `json:"workflows"`
	Triggers       []Trigger          `json:"triggers,omitempty"`
	Hooks          map[string]string  `json:"hooks,omitempty"`
	Actions        map[string]*Action `json:"actions,omitempty"`
	Intents        map[string]*Intent `json:"intents,omitempty"`
	KnowledgeBases []KnowledgeBaseRef `json:"knowledgeBases,omitempty"`
}

// Settings tune the engine.
type Settings struct {
	// InactivityTimeout is in minutes; 0 means DefaultInactivityTimeout.
	InactivityTimeout   float64 `json:"inactivityTimeout,omitempty"`
	NodeRepetitionLimit int     `json:"nodeRepetitionLimit,omitempty"`
	IntentThreshold     float64 `json:"intentThreshold,omitempty"`
}

// Defaults of Settings.
const (
	DefaultInactivityTimeout   = 30 // minutes
	DefaultNodeRepetitionLimit = 20
	DefaultIntentThreshold     = 0.5
	maxStackDepth              = 32
)

// Variable declares a typed variable with a default.
type Variable struct {
	Name        string   `json:"name"`
	Scope       string   `json:"scope,omitempty"`
	Workflow    string   `json:"workflow,omitempty"`
	Type        string   `json:"type"`
	Default     any      `json:"default,omitempty"`
	Values      []string `json:"values,omitempty"`
	Pattern     string   `json:"pattern,omitempty"`
	Input       bool     `json:"input,omitempty"`
	Output      bool     `json:"output,omitempty"`
	Description string   `json:"description,omitempty"`
}

// Flow is a workflow: nodes holding ordered cards.
type Flow struct {
	Description string           `json:"description,omitempty"`
	Variables   []Variable       `json:"variables,omitempty"`
	Nodes       map[string]*Node `json:"nodes"`

	start string
}

// Node types.
const (
	NodeStart    = "start"
	NodeStandard = "standard"
	NodeEnd      = "end"
	NodeExit     = "exit"
)

// Node is a step of a workflow.
type Node struct {
	Type        string  `json:"type"`
	Description string  `json:"description,omitempty"`
	Cards       []*Card `json:"cards,omitempty"`
	Next        string  `json:"next,omitempty"`
}

// Card kinds.
const (
	CardMessage    = "message"
	CardCode       = "code"
	CardSet        = "set"
	CardLog        = "log"
	CardAction     = "action"
	CardExpression = "expression"
	CardAlways     = "always"
	CardChoice     = "choice"
	CardCapture    = "capture"
	CardWait       = "wait"
	CardTimeout    = "timeout"
	CardCall       = "call"
	CardEnd        = "end"
	// CardTableRead reads the first row of a table matching filter into a
	// variable (null when none); CardTableWrite upserts row by keyColumn
	// (the table's when empty). Both use the Tables API's row operations.
	CardTableRead  = "tableRead"
	CardTableWrite = "tableWrite"
	// CardQueryKB answers question (the message's text by default) from
	// the bot's knowledge bases (those listed in knowledgeBases, else all):
	// the answer goes to output (null when no passage scored) and, with
	// say, to the user with its sources.
	CardQueryKB = "queryKnowledgeBase"
	// CardHandoff hands the conversation over to humans (Parley's
	// client.requestHandoff): the bot's turns in it are skipped until an
	// operator hands it back.
	CardHandoff = "handoff"
)

// Card is one step of a node. Which fields apply depends on Type (see the
// schema and docs/bot-json.md).
type Card struct {
	Type        string `json:"type"`
	ID          string `json:"id,omitempty"`
	Description string `json:"description,omitempty"`

	Payload    json.RawMessage   `json:"payload,omitempty"`    // message: a template string or a payload object
	Code       string            `json:"code,omitempty"`       // code
	Variable   string            `json:"variable,omitempty"`   // set, capture, choice
	Value      json.RawMessage   `json:"value,omitempty"`      // set
	Expression string            `json:"expression,omitempty"` // set
	Level      string            `json:"level,omitempty"`      // log
	Message    string            `json:"message,omitempty"`    // log
	Action     string            `json:"action,omitempty"`     // action
	Input      map[string]any    `json:"input,omitempty"`      // action, call
	Output     json.RawMessage   `json:"output,omitempty"`     // action: a variable; call: {outputVar: variable}
	Condition  string            `json:"condition,omitempty"`  // expression
	To         string            `json:"to,omitempty"`         // expression, always
	Kind       string            `json:"kind,omitempty"`       // capture
	Prompt     json.RawMessage   `json:"prompt,omitempty"`     // capture, choice
	Options    []Option          `json:"options,omitempty"`    // capture (choice), choice
	Retries    *int              `json:"retries,omitempty"`
	RetryMsg   string            `json:"retryMessage,omitempty"`
	Validation string            `json:"validation,omitempty"`
	OnFailure  string            `json:"onFailure,omitempty"`
	Cancel     []string          `json:"cancel,omitempty"`
	OnCancel   string            `json:"onCancel,omitempty"`
	SkipIfSet  bool              `json:"skipIfSet,omitempty"`
	Minutes    float64           `json:"minutes,omitempty"`        // timeout
	Workflow   string            `json:"workflow,omitempty"`       // call
	Table      string            `json:"table,omitempty"`          // tableRead, tableWrite
	Filter     map[string]any    `json:"filter,omitempty"`         // tableRead
	Row        map[string]any    `json:"row,omitempty"`            // tableWrite
	KeyColumn  string            `json:"keyColumn,omitempty"`      // tableWrite
	Question   string            `json:"question,omitempty"`       // queryKnowledgeBase
	KBs        []string          `json:"knowledgeBases,omitempty"` // queryKnowledgeBase
	Say        bool              `json:"say,omitempty"`            // queryKnowledgeBase
	Reason     string            `json:"reason,omitempty"`         // handoff
	outputMap  map[string]string // call: output var of the callee → variable of the caller
	outputVar  string            // action
}

// Option is a choice option; To is the node a choice card goes to.
type Option struct {
	Label string `json:"label"`
	Value string `json:"value,omitempty"`
	To    string `json:"to,omitempty"`
}

func (o Option) value() string {
	if o.Value != "" {
		return o.Value
	}
	return o.Label
}

// Trigger types.
const (
	TriggerConversationStarted = "conversation_started"
	TriggerIntent              = "intent"
	TriggerEvent               = "event"
	TriggerSchedule            = "schedule"
	TriggerWebhook             = "webhook"
)

// Trigger starts a workflow at a node.
type Trigger struct {
	ID        string `json:"id,omitempty"`
	Type      string `json:"type"`
	Workflow  string `json:"workflow"`
	Node      string `json:"node,omitempty"`
	Interrupt bool   `json:"interrupt,omitempty"`
	Intent    string `json:"intent,omitempty"`
	EventName string `json:"eventName,omitempty"`
	Cron      string `json:"cron,omitempty"`
	// Path narrows a webhook trigger to the events sent to
	// {webhookUrl}{Path} (empty: every webhook event).
	Path string `json:"path,omitempty"`
}

// Action is a JavaScript action, callable from action cards and code.
type Action struct {
	Description string         `json:"description,omitempty"`
	Code        string         `json:"code"`
	Input       map[string]any `json:"input,omitempty"`
	Output      map[string]any `json:"output,omitempty"`
}

// Intent is a set of example utterances and optional keywords.
type Intent struct {
	Utterances []string `json:"utterances"`
	Keywords   []string `json:"keywords,omitempty"`
}

// KnowledgeBaseRef names one of the bot's knowledge bases (Files API) by
// id or name: a bot whose document lists some answers from those only
// (event.kb, queryKnowledgeBase cards); none listed: all of them.
type KnowledgeBaseRef struct {
	ID          string `json:"id"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
}

// KnowledgeBaseNames lists the ids and names of the document's
// knowledgeBases: the bot answers from those of its knowledge bases (all
// when the list is empty).
func (b *Bot) KnowledgeBaseNames() []string {
	var out []string
	for _, r := range b.Doc.KnowledgeBases {
		out = append(out, r.ID)
		if r.Name != "" {
			out = append(out, r.Name)
		}
	}
	return out
}
