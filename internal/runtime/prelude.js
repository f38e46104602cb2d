// Prelude: evaluated once per runtime, before the bot's code. It is one
// function expression; Go calls it with the native host functions and keeps
// what it returns, so nothing of the plumbing is reachable from bot code as
// a global. Built-ins are captured here, before bot code can replace them.
(function (native, limits) {
  'use strict';
  var freeze = Object.freeze;
  var keys = Object.keys;
  var hasOwn = Function.prototype.call.bind(Object.prototype.hasOwnProperty);
  var TypeErr = TypeError;
  var Err = Error;
  var RangeErr = RangeError;

  var handlers = { message: [], event: [] };
  var hooks = {
    before_incoming_message: [],
    after_incoming_message: [],
    before_outgoing_message: [],
    after_turn_end: []
  };
  var actionHandlers = Object.create(null);
  var locked = false;
  var cur = null; // context of the running turn

  function open(what) {
    if (locked) throw new Err(what + ': handlers must be registered at the top level of the bot code');
  }
  function fn(f, what) {
    if (typeof f !== 'function') throw new TypeErr(what + ': the handler must be a function');
  }
  function on(kind) {
    return function (type, f) {
      var what = 'bot.on.' + kind;
      open(what);
      if (typeof type !== 'string' || type === '') throw new TypeErr(what + ": type must be '*' or a " + kind + ' type');
      fn(f, what);
      handlers[kind].push({ type: type, fn: f });
    };
  }

  var bot = freeze({
    on: freeze({ message: on('message'), event: on('event') }),
    hook: function (name, f) {
      open('bot.hook');
      if (typeof name !== 'string' || !hasOwn(hooks, name)) {
        throw new TypeErr('bot.hook: unknown hook ' + JSON.stringify(String(name)) + ', expected one of ' + keys(hooks).join(', '));
      }
      fn(f, 'bot.hook');
      hooks[name].push(f);
    },
    action: function (name, f) {
      open('bot.action');
      if (typeof name !== 'string' || name === '') throw new TypeErr('bot.action: name must be a non-empty string');
      fn(f, 'bot.action');
      if (actionHandlers[name]) throw new Err('bot.action: ' + name + ' is already defined');
      actionHandlers[name] = f;
    }
  });

  function logFn(level) {
    return function () { native.log(level, arguments); };
  }
  var logger = freeze({ debug: logFn('debug'), info: logFn('info'), log: logFn('info'), warn: logFn('warn'), error: logFn('error') });
  var console = freeze({ debug: logFn('debug'), info: logFn('info'), log: logFn('info'), warn: logFn('warn'), error: logFn('error'), trace: logFn('debug') });

  function turnCtx(what) {
    if (cur === null) throw new Err(what + ' can only be used while a turn runs');
    return cur;
  }
  function req(r, what) {
    if (r === null || typeof r !== 'object') throw new TypeErr(what + ': expected an object argument');
    return r;
  }
  function convId(r, ctx) {
    return r.conversationId === undefined ? ctx.event.conversationId : r.conversationId;
  }

  function makeClient(inHook) {
    return freeze({
      createMessage: async function (r) {
        req(r, 'client.createMessage');
        var ctx = turnCtx('client.createMessage');
        if (inHook) throw new Err('client.createMessage cannot be called from a before_outgoing_message hook');
        var conversationId = convId(r, ctx);
        var payload = r.payload;
        var hs = hooks.before_outgoing_message;
        if (hs.length > 0) {
          // The hook sees a copy as an outgoing event; what it leaves in
          // event.payload is sent, and returning { drop: true } sends nothing.
          var ev = native.outgoingEvent(conversationId, payload, r.tags, ctx.state);
          var hctx = { event: ev, message: undefined, user: ctx.user, conversation: ctx.conversation, client: hookClient, logger: logger, state: ctx.state, actions: actions };
          for (var i = 0; i < hs.length; i++) {
            var res = await hs[i](hctx);
            if (res && res.drop === true) return { message: null };
          }
          payload = ev.payload;
        }
        return { message: native.createMessage(conversationId, payload, r.metadata, r.tags) };
      },
      createEvent: async function (r) {
        req(r, 'client.createEvent');
        return { event: native.createEvent(convId(r, turnCtx('client.createEvent')), r.payload) };
      },
      getMessage: async function (r) {
        req(r, 'client.getMessage');
        turnCtx('client.getMessage');
        return { message: native.getMessage(r.id) };
      },
      listMessages: async function (r) {
        req(r, 'client.listMessages');
        return native.listMessages(convId(r, turnCtx('client.listMessages')), r.nextToken);
      },
      getUser: async function (r) {
        req(r, 'client.getUser');
        turnCtx('client.getUser');
        return { user: native.getUser(r.id) };
      },
      getConversation: async function (r) {
        req(r, 'client.getConversation');
        turnCtx('client.getConversation');
        return { conversation: native.getConversation(r.id) };
      }
    });
  }
  var client = makeClient(false);
  var hookClient = makeClient(true);

  var actions = {};
  function lock() {
    locked = true;
    var names = keys(actionHandlers);
    for (var i = 0; i < names.length; i++) {
      (function (f) {
        actions[names[i]] = async function (input) {
          var ctx = turnCtx('actions');
          return await f({ input: input, event: ctx.event, message: ctx.message, user: ctx.user, conversation: ctx.conversation, client: client, logger: logger, state: ctx.state, actions: actions });
        };
      })(actionHandlers[names[i]]);
    }
    freeze(actions);
  }

  async function turn(isMessage, event, message, user, conversation, state) {
    var ctx = { event: event, message: message, user: user, conversation: conversation, client: client, logger: logger, state: state, actions: actions };
    cur = ctx;
    try {
      var stopped = false, i, hs;
      if (isMessage) {
        hs = hooks.before_incoming_message;
        for (i = 0; i < hs.length; i++) {
          var res = await hs[i](ctx);
          native.refresh(event); // the hook may have changed event.payload
          if (res && res.stop === true) { stopped = true; break; }
        }
      }
      if (!stopped) {
        var list = isMessage ? handlers.message : handlers.event;
        for (i = 0; i < list.length; i++) {
          if (list[i].type === '*' || list[i].type === event.type) await list[i].fn(ctx);
        }
        if (isMessage) {
          hs = hooks.after_incoming_message;
          for (i = 0; i < hs.length; i++) await hs[i](ctx);
        }
      }
      hs = hooks.after_turn_end;
      for (i = 0; i < hs.length; i++) await hs[i](ctx);
      return stopped;
    } finally {
      cur = null;
    }
  }

  // Single built-in calls that allocate their whole result at once cannot be
  // interrupted; refuse absurd sizes up front (see docs/runtime.md, Limits).
  var maxLen = limits.maxStringLength;
  function guard(proto, name, size) {
    var orig = proto[name];
    Object.defineProperty(proto, name, {
      value: function () {
        if (size(this, arguments) > maxLen) throw new RangeErr('Invalid string length');
        return orig.apply(this, arguments);
      },
      writable: true, configurable: true, enumerable: false
    });
  }
  guard(String.prototype, 'repeat', function (s, a) { return String(s).length * Number(a[0]); });
  guard(String.prototype, 'padStart', function (s, a) { return Number(a[0]); });
  guard(String.prototype, 'padEnd', function (s, a) { return Number(a[0]); });
  guard(Array.prototype, 'join', function (s, a) { return s.length; });
  guard(Array.prototype, 'fill', function (s, a) { return s.length; });

  return { bot: bot, console: console, turn: turn, lock: lock };
})
