// Prelude: evaluated once per runtime, before the bot's code. It is one
// function expression; Go calls it with the native host functions and keeps
// what it returns, so nothing of the plumbing is reachable from bot code as
// a global. Built-ins are captured here, before bot code can replace them.
(function (native, limits, clientOperations) {
  'use strict';
  var freeze = Object.freeze;
  var keys = Object.keys;
  var hasOwn = Function.prototype.call.bind(Object.prototype.hasOwnProperty);
  var TypeErr = TypeError;
  var Err = Error;
  var RangeErr = RangeError;
  var DateCtor = Date;
  var parse = JSON.parse;

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

  // Client methods return promises. Host calls are synchronous, so a
  // settled promise is returned directly (cheaper than an async function);
  // an exception becomes a rejection, as it would in an async function.
  var resolved = Promise.resolve.bind(Promise), rejected = Promise.reject.bind(Promise);
  function settled(f) {
    return function (r) {
      try { return resolved(f(r)); } catch (e) { return rejected(e); }
    };
  }

  async function sendWithHooks(ctx, conversationId, r) {
    // The hooks see a copy as an outgoing event; what they leave in
    // event.payload is sent, and returning { drop: true } sends nothing.
    var hs = hooks.before_outgoing_message, res;
    var ev = native.outgoingEvent(conversationId, r.payload, r.tags, ctx.state);
    var hctx = { event: ev, message: undefined, user: ctx.user, conversation: ctx.conversation, client: hookClient, logger: logger, state: ctx.state, actions: actions };
    for (var i = 0; i < hs.length; i++) {
      res = hs[i](hctx);
      if (isThenable(res)) res = await res;
      if (res && res.drop === true) return { message: null };
    }
    return created(native.createMessage(conversationId, ev.payload, r.metadata, r.tags));
  }

  // created is what client.createMessage resolves to: { message }, whose
  // message is built on its first read (get, from native.createMessage),
  // which leaves it a plain property, as an assignment does.
  function created(get) {
    var r = {};
    defineProperty(r, 'message', { get: get, set: setCreated, enumerable: true, configurable: true });
    return r;
  }
  function setCreated(v) {
    defineProperty(this, 'message', { value: v, writable: true, enumerable: true, configurable: true });
  }

  function makeClient(inHook) {
    var c = {
      createMessage: function (r) {
        try {
          req(r, 'client.createMessage');
          var ctx = turnCtx('client.createMessage');
          if (inHook) throw new Err('client.createMessage cannot be called from a before_outgoing_message hook');
          var conversationId = convId(r, ctx);
          if (hooks.before_outgoing_message.length > 0) return sendWithHooks(ctx, conversationId, r);
          return resolved(created(native.createMessage(conversationId, r.payload, r.metadata, r.tags)));
        } catch (e) {
          return rejected(e);
        }
      },
      createEvent: settled(function (r) {
        req(r, 'client.createEvent');
        return { event: native.createEvent(convId(r, turnCtx('client.createEvent')), r.payload) };
      }),
      getMessage: settled(function (r) {
        req(r, 'client.getMessage');
        turnCtx('client.getMessage');
        return { message: native.getMessage(r.id) };
      }),
      listMessages: settled(function (r) {
        req(r, 'client.listMessages');
        return native.listMessages(convId(r, turnCtx('client.listMessages')), r.nextToken);
      }),
      getUser: settled(function (r) {
        req(r, 'client.getUser');
        turnCtx('client.getUser');
        return { user: native.getUser(r.id) };
      }),
      getConversation: settled(function (r) {
        req(r, 'client.getConversation');
        turnCtx('client.getConversation');
        return { conversation: native.getConversation(r.id) };
      })
    };
    // The other Runtime API operations of a turn (states, tags,
    // getOrCreate, lists, events), served by the Runtime API's use cases.
    for (var i = 0; i < clientOperations.length; i++) {
      (function (op) {
        c[op] = settled(function (r) {
          req(r, 'client.' + op);
          turnCtx('client.' + op);
          return native.call(op, r);
        });
      })(clientOperations[i]);
    }
    return freeze(c);
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

  // await only what is a promise: most handlers and hooks are synchronous,
  // and every await costs promise jobs.
  function isThenable(r) { return r !== null && typeof r === 'object' && typeof r.then === 'function'; }

  // saveState returns the JSON of a state, or null when it is not a plain
  // object; undefined and null mean {}.
  function saveState(s) {
    if (s === undefined || s === null) return '{}';
    if (typeof s !== 'object' || isArray(s)) return null;
    return stringify(s);
  }

  // A turn runs synchronously for as long as its hooks and handlers return
  // plain values. The first thenable hands the rest of the turn to an async
  // continuation, so a turn that never waits creates no promise of its own.
  // The phases follow docs/runtime.md: before_incoming_message hooks (message
  // turns), handlers, after_incoming_message hooks (message turns),
  // after_turn_end hooks. A runtime runs one turn at a time and is discarded
  // when a turn does not finish, so the turn's progress lives here rather
  // than in a per-turn object.
  var tMessage = false, tEvent = null, tState = null, tPhase = 0, tI = 0, tSnap, tStopped = false;

  function next() {
    var hs;
    for (;;) {
      switch (tPhase) {
        case 0: hs = hooks.before_incoming_message; break;
        case 1:
          hs = tMessage ? handlers.message : handlers.event;
          while (tI < hs.length) {
            var h = hs[tI++];
            if (h.type === '*' || h.type === tEvent.type) return h.fn;
          }
          tPhase = tMessage ? 2 : 3; tI = 0;
          continue;
        case 2: hs = hooks.after_incoming_message; break;
        case 3: hs = hooks.after_turn_end; break;
        default: return null;
      }
      if (tI < hs.length) return hs[tI++];
      tPhase++; tI = 0;
    }
  }

  // after takes the (settled) result of what next returned.
  function after(r) {
    if (tPhase !== 0) return;
    // A before_incoming_message hook may change event.payload; type and
    // preview follow it.
    var now = stringify(tEvent.payload);
    if (now !== tSnap) { native.refresh(tEvent, now); tSnap = now; }
    if (r && r.stop === true) { tStopped = true; tPhase = 3; tI = 0; }
  }

  // finish hands the outcome to Go. The states are serialized here, inside
  // the turn's call into the runtime: each separate call from Go would cost
  // goja a fresh value stack.
  function finish() {
    var u = tState.user, c = tState.conversation, b = tState.bot;
    if (plain(u) && plain(c) && plain(b)) {
      if (bare(u) && bare(c) && bare(b)) {
        // A bot that keeps no state: what JSON.stringify would write, without
        // its call (a replacer call per value, a tenth of an echo bot's turn).
        native.result(tStopped, '[{},{},{}]');
        return;
      }
      // The usual case: one JSON.stringify for the three, split by Go.
      depthOK(u); depthOK(c); depthOK(b);
      native.result(tStopped, nativeStringify([u, c, b]));
    } else {
      native.result(tStopped, saveState(u), saveState(c), saveState(b));
    }
  }
  // bare: an object without an own enumerable string key, which
  // JSON.stringify writes as {} (given plain). Not a for-in: that walks the
  // prototype chain, Object.prototype's keys included, a twentieth of a
  // turn's CPU for three empty states.
  function bare(s) {
    return keys(s).length === 0;
  }
  // plain: an object that JSON.stringify renders the same alone and as an
  // array element (no toJSON, which would receive the key).
  function plain(s) {
    return s !== null && typeof s === 'object' && !isArray(s) && s.toJSON === undefined;
  }

  // makeEvent builds the event object: the documented fields in the documented
  // order, optional ones (undefined here) left out, createdOn a Date. Go
  // passes the fields as already fresh JS values (see instance.eventArgs).
  function makeEvent(botId, conversationId, createdMs, direction, id, integration, kb, messageId, payload, preview, state,
    tagsConversation, tagsMessage, tagsUser, trigger, type, userId) {
    var e = { botId: botId };
    if (conversationId !== undefined) e.conversationId = conversationId;
    e.createdOn = new DateCtor(createdMs);
    e.direction = direction;
    e.id = id;
    if (integration !== undefined) e.integration = integration;
    if (kb !== undefined) e.kb = kb;
    if (messageId !== undefined) e.messageId = messageId;
    e.payload = payload;
    e.preview = preview;
    e.state = state;
    if (tagsConversation !== undefined) e.tags = { conversation: tagsConversation, message: tagsMessage, user: tagsUser };
    if (trigger !== undefined) e.trigger = trigger;
    e.type = type;
    if (userId !== undefined) e.userId = userId;
    return e;
  }

  // parseState turns stored state JSON into a fresh object; none, or
  // anything that is not a JSON object, starts afresh as {}.
  function parseState(raw) {
    if (raw === undefined) return {};
    var v;
    try { v = parse(raw); } catch (e) { return {}; }
    return v !== null && typeof v === 'object' && !isArray(v) ? v : {};
  }

  // dispatchTurn runs one turn: the before_incoming_message hooks, then
  // the handlers the bot registered with bot.on.message / bot.on.event
  // that match the event. Its arguments come from Go (turn.run in
  // instance.go): the
  // stored states' JSON, the message, user and conversation as fresh JS
  // values, then the arguments of makeEvent without state.
  function dispatchTurn(isMessage, userState, conversationState, botState, message, user, conversation,
    botId, conversationId, createdMs, direction, id, integration, kb, messageId, payload, preview,
    tagsConversation, tagsMessage, tagsUser, trigger, type, userId) {
    var state = { user: parseState(userState), conversation: parseState(conversationState), bot: parseState(botState) };
    var event = makeEvent(botId, conversationId, createdMs, direction, id, integration, kb, messageId, payload, preview, state,
      tagsConversation, tagsMessage, tagsUser, trigger, type, userId);
    var ctx = { event: event, message: message, user: user, conversation: conversation, client: client, logger: logger, state: state, actions: actions };
    var waiting = false;
    tMessage = isMessage; tEvent = event; tState = state; tPhase = 1; tI = 0; tSnap = undefined; tStopped = false;
    cur = ctx;
    try {
      if (isMessage && hooks.before_incoming_message.length > 0) {
        tPhase = 0;
        tSnap = stringify(event.payload);
      }
      for (;;) {
        var f = next();
        if (f === null) { finish(); return; }
        var r = f(ctx);
        if (isThenable(r)) { waiting = true; return resume(ctx, r); }
        after(r);
      }
    } finally {
      if (!waiting) end();
    }
  }

  // resume goes on with the turn once what a hook or handler returned
  // settles, as an async function awaiting it would, through the promise's
  // reactions: an async function's runner and generator cost more than the
  // reaction its await takes.
  function resume(ctx, p) {
    function step(r) {
      try {
        for (;;) {
          after(r);
          var f = next();
          if (f === null) { finish(); break; }
          r = f(ctx);
          if (isThenable(r)) return resolved(r).then(step, fail);
        }
      } catch (e) {
        end();
        throw e;
      }
      end();
    }
    return resolved(p).then(step, fail);
  }
  function fail(e) {
    end();
    throw e;
  }

  function end() {
    cur = null; tEvent = null; tState = null; tSnap = undefined;
  }

  // Guards. goja checks its interrupt flag between JS instructions only, so
  // one built-in call that loops over a huge length or allocates a huge
  // result cannot be stopped by the time budget nor the memory watchdog.
  // Refuse absurd sizes before the built-in starts (docs/runtime.md, Limits):
  // during a turn, the turn ends (memory_limit; try cannot catch it), at the
  // top level a RangeError is thrown.
  var maxLen = limits.maxStringLength, maxArr = limits.maxArrayLength, maxDepth = limits.maxDepth, maxArgs = limits.maxArgs;
  var rApply = Reflect.apply, rConstruct = Reflect.construct, isArray = Array.isArray, defineProperty = Object.defineProperty;
  function define(obj, name, value) {
    defineProperty(obj, name, { value: value, writable: true, configurable: true, enumerable: false });
  }
  function lenOf(x) {
    if (x === null || (typeof x !== 'object' && typeof x !== 'function')) return 0;
    var l = x.length;
    return typeof l === 'number' ? l : 0;
  }
  function tooBig(what, lim) {
    lim = lim || maxLen;
    native.tooBig(what, lim);
    return new RangeErr(what + ': size over the sandbox limit of ' + lim);
  }
  function guard(obj, name, check) {
    var orig = obj[name];
    if (typeof orig !== 'function') return;
    var g = function () {
      check(this, arguments);
      return rApply(orig, this, arguments);
    };
    defineProperty(g, 'name', { value: name, configurable: true });
    define(obj, name, g);
  }
  function thisLen(name) {
    return function (self) { if (lenOf(self) > maxArr) throw tooBig('Array.prototype.' + name, maxArr); };
  }
  guard(String.prototype, 'repeat', function (s, a) { if (String(s).length * Number(a[0]) > maxLen) throw tooBig('String.prototype.repeat'); });
  guard(String.prototype, 'padStart', function (s, a) { if (Number(a[0]) > maxLen) throw tooBig('String.prototype.padStart'); });
  guard(String.prototype, 'padEnd', function (s, a) { if (Number(a[0]) > maxLen) throw tooBig('String.prototype.padEnd'); });
  var arrayMethods = ['copyWithin', 'every', 'fill', 'filter', 'find', 'findIndex', 'findLast', 'findLastIndex',
    'flat', 'flatMap', 'forEach', 'includes', 'indexOf', 'lastIndexOf', 'map', 'reduce', 'reduceRight',
    'reverse', 'shift', 'slice', 'some', 'sort', 'splice', 'toLocaleString', 'toReversed', 'toSorted', 'toSpliced',
    'toString', 'unshift', 'with'];
  for (var m = 0; m < arrayMethods.length; m++) guard(Array.prototype, arrayMethods[m], thisLen(arrayMethods[m]));
  // join (and toString, which calls it) counts the length of its result in
  // Go before building it.
  var join = native.join;
  defineProperty(join, 'name', { value: 'join', configurable: true });
  defineProperty(join, 'length', { value: 1, configurable: true });
  define(Array.prototype, 'join', join);
  // concat: the length of the result is the sum of what it spreads.
  var isSpreadable = Symbol.isConcatSpreadable;
  guard(Array.prototype, 'concat', function (self, a) {
    var n = lenOf(self);
    for (var i = 0; i < a.length && n <= maxArr; i++) {
      var x = a[i];
      if (x !== null && typeof x === 'object' && (x[isSpreadable] !== undefined ? x[isSpreadable] : isArray(x))) n += lenOf(x); else n++;
    }
    if (n > maxArr) throw tooBig('Array.prototype.concat', maxArr);
  });
  // String.prototype.concat: each argument is converted once, here, and the
  // total length checked before goja builds the string.
  var strConcat = String.prototype.concat, Str = String;
  define(String.prototype, 'concat', function concat() {
    if (this === null || this === undefined) throw new TypeErr('String.prototype.concat called on null or undefined');
    var s = Str(this), n = s.length, parts = [];
    for (var i = 0; i < arguments.length; i++) {
      var x = Str(arguments[i]);
      if ((n += x.length) > maxLen) throw tooBig('String.prototype.concat');
      parts.push(x);
    }
    return rApply(strConcat, s, parts);
  });
  function argsLen(what, i) {
    return function (self, a) { if (lenOf(a[i]) > maxArgs) throw new RangeErr(what + ': more than ' + maxArgs + ' arguments'); };
  }
  guard(Function.prototype, 'apply', argsLen('Function.prototype.apply', 1));
  guard(Reflect, 'apply', argsLen('Reflect.apply', 2));
  guard(Reflect, 'construct', argsLen('Reflect.construct', 1));
  guard(Array, 'from', function (self, a) { if (lenOf(a[0]) > maxArr) throw tooBig('Array.from', maxArr); });

  // Constructors taking a size are replaced by a checking function sharing
  // their prototype, so instanceof, subclassing and statics keep working
  // (goja's instanceof does not accept a Proxy).
  var getOwnNames = Object.getOwnPropertyNames, getOwnSymbols = Object.getOwnPropertySymbols;
  var getOwnDesc = Object.getOwnPropertyDescriptor, getProto = Object.getPrototypeOf, setProto = Object.setPrototypeOf;
  var ArrayBufferProto = ArrayBuffer.prototype, isProtoOf = Function.prototype.call.bind(Object.prototype.isPrototypeOf);
  function sized(name, bytesPer, lim) {
    var C = globalThis[name];
    if (typeof C !== 'function') return;
    var W = function () {
      var x = arguments[0];
      var n = typeof x === 'number' ? x : (x !== null && typeof x === 'object' && isProtoOf(ArrayBufferProto, x) ? 0 : lenOf(x));
      if (n * bytesPer > lim) throw tooBig(name, lim);
      return new.target ? rConstruct(C, arguments, new.target === W ? C : new.target) : rApply(C, this, arguments);
    };
    var own = getOwnNames(C).concat(getOwnSymbols(C));
    for (var i = 0; i < own.length; i++) defineProperty(W, own[i], getOwnDesc(C, own[i]));
    setProto(W, getProto(C));
    define(C.prototype, 'constructor', W);
    define(globalThis, name, W);
  }
  sized('Array', 1, maxArr);
  var typed = { Int8Array: 1, Uint8Array: 1, Uint8ClampedArray: 1, Int16Array: 2, Uint16Array: 2, Int32Array: 4, Uint32Array: 4,
    Float32Array: 4, Float64Array: 8, BigInt64Array: 8, BigUint64Array: 8 };
  var tn = keys(typed);
  for (var k = 0; k < tn.length; k++) sized(tn[k], typed[tn[k]], maxLen);
  sized('ArrayBuffer', 1, maxLen);

  // JSON.stringify recurses natively and checks for cycles in O(depth²):
  // walk the value first (interruptible JS) and refuse deep nesting.
  var isBoxedString = native.isBoxedString;
  function checkDepth(v) {
    if (v === null || typeof v !== 'object') return;
    var stack = null, depths = null, o = v, d = 1, x, i, ks;
    for (;;) {
      if (d > maxDepth) throw new RangeErr('JSON.stringify: value nested deeper than ' + maxDepth + ' levels (or circular)');
      // The work lists are only allocated once a nested object shows up.
      if (isArray(o)) {
        for (i = 0; i < o.length; i++) {
          x = o[i];
          if (x !== null && typeof x === 'object') {
            if (stack === null) { stack = []; depths = []; }
            stack.push(x); depths.push(d + 1);
          }
        }
      } else if (!isBoxedString(o)) { // its keys are its characters
        ks = keys(o);
        for (i = 0; i < ks.length; i++) {
          x = o[ks[i]];
          if (x !== null && typeof x === 'object') {
            if (stack === null) { stack = []; depths = []; }
            stack.push(x); depths.push(d + 1);
          }
        }
      }
      if (stack === null || stack.length === 0) return;
      o = stack.pop(); d = depths.pop();
    }
  }
  // The usual small values are checked by Go, which allocates no arrays
  // (instance.nativeShallow); it leaves anything bigger or unusual to the
  // walk above.
  function depthOK(v) {
    if (!native.shallow(v)) checkDepth(v);
  }
  // The output itself is counted as goja writes it (instance.nativeStringify).
  var nativeStringify = native.stringify;
  var stringify = function stringify(value, replacer, space) {
    depthOK(value);
    return nativeStringify(value, replacer, space);
  };
  define(JSON, 'stringify', stringify);

  // Regular expressions: one match of the backtracking engine stops after
  // limits.regexpMs (regexp2's match timeout, set by Go) as if nothing more
  // matched. Where that shows (test, match, search), the turn ends instead
  // of going on with a wrong answer.
  var dateNow = Date.now, regexpMs = limits.regexpMs, RegExpProto = RegExp.prototype;
  function timed(obj, key, what, fnArg) {
    var orig = obj[key];
    if (typeof orig !== 'function') return;
    var g = function () {
      // A replacement function's own time is not the regexp's.
      if (fnArg !== undefined && typeof arguments[fnArg] === 'function') return rApply(orig, this, arguments);
      var t0 = dateNow();
      var r = rApply(orig, this, arguments);
      if (dateNow() - t0 >= regexpMs) native.regexpTimeout(what);
      return r;
    };
    defineProperty(g, 'name', { value: orig.name, configurable: true });
    defineProperty(g, 'length', { value: orig.length, configurable: true });
    define(obj, key, g);
  }
  timed(RegExpProto, 'test', 'RegExp.prototype.test');
  timed(RegExpProto, Symbol.match, 'RegExp.prototype[Symbol.match]');
  timed(RegExpProto, Symbol.search, 'RegExp.prototype[Symbol.search]');
  timed(RegExpProto, Symbol.replace, 'RegExp.prototype[Symbol.replace]', 1);
  timed(RegExpProto, Symbol.split, 'RegExp.prototype[Symbol.split]');

  return { bot: bot, console: console, dispatchTurn: dispatchTurn, makeEvent: makeEvent, lock: lock, stringify: stringify };
})
