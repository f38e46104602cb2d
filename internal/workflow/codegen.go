package workflow

import (
	"encoding/json"
	"strings"

	"github.com/parley-bots/parley/internal/runtime"
)

// Marker starts the generated code of every workflow bot version, so the
// service can tell a workflow bot from a code-first one without loading
// its version.
const Marker = "/* parley:workflow-bot v1 */"

// IsWorkflowCode reports whether deployed code is a workflow bot's.
func IsWorkflowCode(code string) bool { return strings.HasPrefix(code, Marker) }

// driverJS is the JavaScript side of the engine: the handlers loop on the
// driver (runtime.DriverGlobal), performing each request in the scope of
// the turn. Expressions and code cards see event, user, conversation, bot
// (the variables of those scopes, which are the runtime's states),
// workflow, session, actions, client, logger, state, message and value.
const driverJS = `(function () {
  'use strict';
  var names = ['event', 'user', 'conversation', 'bot', 'workflow', 'session', 'actions', 'client', 'logger', 'state', 'message', 'value'];
  var Fn = Function, stringify = JSON.stringify, cache = Object.create(null);
  function compile(kind, src) {
    var key = kind + '\u0000' + src, f = cache[key];
    if (f === undefined) {
      var body = kind === 'expr' ? 'return (\n' + src + '\n);' : 'return (async () => {\n' + src + '\n})();';
      f = Fn.apply(null, names.concat([body]));
      cache[key] = f;
    }
    return f;
  }
  function describe(e) {
    if (e !== null && typeof e === 'object') {
      return { name: String(e.name || 'Error'), message: String(e.message === undefined ? e : e.message), stack: e.stack ? String(e.stack) : '' };
    }
    return { name: 'Error', message: String(e), stack: '' };
  }
  function drive(ctx) {
    var d = globalThis.` + runtime.DriverGlobal + `;
    if (typeof d !== 'function') return;
    var st = ctx.state, scope = { workflow: {}, session: {} };
    function obj(s) {
      if (s === 'workflow') return scope.workflow;
      if (s === 'session') return scope.session;
      if (st[s] === null || typeof st[s] !== 'object') st[s] = {};
      return st[s];
    }
    function args(value) {
      return [ctx.event, obj('user'), obj('conversation'), obj('bot'), scope.workflow, scope.session, ctx.actions, ctx.client, ctx.logger, st, ctx.message, value];
    }
    async function perform(req) {
      if (req.context) st.context = req.context;
      switch (req.op) {
        case 'begin':
          scope.workflow = req.workflow || {}; scope.session = req.session || {};
          st.workflow = scope.workflow; st.session = scope.session;
          var ds = req.defaults || [];
          for (var i = 0; i < ds.length; i++) {
            var o = obj(ds[i].scope);
            if (o[ds[i].name] === undefined) o[ds[i].name] = ds[i].value;
          }
          return null;
        case 'eval':
          var v = compile('expr', req.src).apply(undefined, args(req.value));
          if (v !== null && typeof v === 'object' && typeof v.then === 'function') v = await v;
          return req.bool ? !!v : v;
        case 'exec':
          await compile('code', req.src).apply(undefined, args(req.value));
          return null;
        case 'send':
          var r = await ctx.client.createMessage({ conversationId: ctx.event.conversationId, payload: req.payload });
          return r && r.message ? r.message.id : null;
        case 'action':
          var f = ctx.actions[req.name];
          if (typeof f !== 'function') throw new Error('unknown action ' + req.name);
          return await f(req.input);
        case 'client':
          if (req.name !== 'findTableRows' && req.name !== 'upsertTableRows' && req.name !== 'requestHandoff') throw new Error('unknown client request ' + req.name);
          return await ctx.client[req.name](req.input);
        case 'set':
          obj(req.scope)[req.name] = req.value;
          return null;
        case 'get':
          return obj(req.scope)[req.name];
        case 'frame':
          var old = scope.workflow;
          scope.workflow = req.workflow || {}; st.workflow = scope.workflow;
          return old;
        case 'session':
          scope.session = req.session || {}; st.session = scope.session;
          return null;
        case 'snapshot':
          return { workflow: scope.workflow, session: scope.session };
        case 'log':
          ctx.logger[req.level](req.message);
          return null;
      }
      throw new Error('unknown request ' + req.op);
    }
    return (async function () {
      var res;
      for (;;) {
        var req = d(res);
        if (!req || req.op === 'done') return;
        try {
          var out = await perform(req);
          res = stringify({ ok: out === undefined ? null : out });
        } catch (e) {
          res = stringify({ error: describe(e) });
        }
      }
    })();
  }
  bot.on.message('*', drive);
  bot.on.event('*', drive);
})();
`

// hookPrelude gives hooks and actions the names code cards see.
const hookPrelude = `var event = ctx.event, message = ctx.message, client = ctx.client, logger = ctx.logger, actions = ctx.actions, state = ctx.state;
var user = state.user, conversation = state.conversation, bot = state.bot, session = state.session || {}, workflow = state.workflow || {};
`

// Code returns the JavaScript of the bot: the driver loop, the hooks and
// the actions. It starts with Marker.
func (b *Bot) Code() string {
	var sb strings.Builder
	sb.WriteString(Marker + "\n")
	sb.WriteString(driverJS)
	for _, name := range sortedKeys(b.Doc.Hooks) {
		q, _ := json.Marshal(name)
		sb.WriteString("bot.hook(" + string(q) + ", async function (ctx) {\n" + hookPrelude + b.Doc.Hooks[name] + "\n});\n")
	}
	for _, name := range sortedKeys(b.Doc.Actions) {
		q, _ := json.Marshal(name)
		sb.WriteString("bot.action(" + string(q) + ", async function (ctx) {\nvar input = ctx.input;\n" + hookPrelude + b.Doc.Actions[name].Code + "\n});\n")
	}
	return sb.String()
}
