// The web monitor of `robota serve`: lists the hosted sessions, creates one, streams the chosen
// session's events (fetch + a hand-written Server-Sent Events reader, because EventSource cannot
// send the bearer token), and sends prompts, aborts and permission answers. Plain ES2020, no
// dependencies. Every piece of data reaches the page through textContent, never as markup.
'use strict';

(() => {
  const TOKEN_KEY = 'robota.monitor.token';
  const LIST_FAILED = 'Listing sessions failed';
  /** How often the session list is reloaded while the page is visible. */
  const SESSION_LIST_INTERVAL_MS = 3000;
  /** Transcript entries kept per session view; older ones are dropped so memory stays bounded. */
  const MAX_TRANSCRIPT_ENTRIES = 5000;
  /** A single SSE line longer than this is a broken stream, not an event to buffer forever. */
  const MAX_SSE_BUFFER_CHARS = 16 * 1024 * 1024;
  /** Characters of a tool's input shown before it is cut. */
  const MAX_INPUT_CHARS = 20000;

  const byTestId = (id) => document.querySelector(`[data-testid="${id}"]`);
  const ui = {
    connection: byTestId('connection-status'),
    forgetToken: byTestId('forget-token'),
    apiError: byTestId('api-error'),
    tokenPanel: byTestId('token-panel'),
    tokenForm: byTestId('token-form'),
    tokenInput: byTestId('token-input'),
    tokenProblem: byTestId('token-problem'),
    monitor: byTestId('monitor'),
    refreshSessions: byTestId('refresh-sessions'),
    newSessionForm: byTestId('new-session-form'),
    newSessionCwd: byTestId('new-session-cwd'),
    newSessionName: byTestId('new-session-name'),
    sessionList: byTestId('session-list'),
    noSessions: byTestId('no-sessions'),
    noSessionSelected: byTestId('no-session-selected'),
    sessionView: byTestId('session-view'),
    sessionName: byTestId('current-session-name'),
    sessionId: byTestId('current-session-id'),
    sessionCwd: byTestId('current-session-cwd'),
    sessionState: byTestId('session-state'),
    streamState: byTestId('stream-state'),
    contextBar: byTestId('context-bar'),
    contextUsage: byTestId('context-usage'),
    promptUsage: byTestId('prompt-usage'),
    cost: byTestId('cost'),
    transcript: byTestId('transcript'),
    promptForm: byTestId('prompt-form'),
    promptInput: byTestId('prompt-input'),
    abort: byTestId('abort'),
  };

  const state = {
    token: null,
    listTimer: null,
    /** The chosen session's id, or null. */
    currentId: null,
    /** Aborts the chosen session's event stream. */
    streamController: null,
    /** The last event `seq` rendered: the resume point and the duplicate filter. */
    lastSeq: 0,
    /** The answer text block being streamed into, and the thinking block. */
    answerBlock: null,
    thinkingBlock: null,
    /** Tool cards by tool_use_id, permission cards by request_id. */
    tools: new Map(),
    permissions: new Map(),
    /** Tool inputs seen in permission requests before their tool_start. */
    toolInputs: new Map(),
    /** True while the transcript is scrolled to its end (it then follows new events). */
    followTranscript: true,
    scrollQueued: false,
    /** Prompt ends seen, to order the stream's news against a session-info answer. */
    promptEnds: 0,
  };

  class ApiError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Token

  /** Takes `#token=…` from the URL (then removes it from the address bar) or sessionStorage. */
  function readToken() {
    const match = /(?:^#|&)token=([^&]*)/.exec(window.location.hash);
    if (match) {
      let token = '';
      try {
        token = decodeURIComponent(match[1]);
      } catch (_) {
        token = '';
      }
      if (token) sessionStorage.setItem(TOKEN_KEY, token);
      // The token should not linger in the address bar, history or a copied link.
      history.replaceState(null, '', window.location.pathname + window.location.search);
    }
    return sessionStorage.getItem(TOKEN_KEY);
  }

  function showTokenForm(problem) {
    stopEverything();
    state.token = null;
    ui.monitor.hidden = true;
    ui.forgetToken.hidden = true;
    ui.tokenPanel.hidden = false;
    ui.tokenProblem.hidden = !problem;
    ui.tokenProblem.textContent = problem || '';
    setConnection(problem ? 'token rejected' : 'no token');
    ui.tokenInput.focus();
  }

  function onUnauthorized(message) {
    sessionStorage.removeItem(TOKEN_KEY);
    showTokenForm(`The server refused the token: ${message}`);
  }

  // ---------------------------------------------------------------------------------------------
  // API

  /** Calls the server's JSON API; throws ApiError with the server's code and message. */
  async function api(method, path, body) {
    const headers = { Authorization: `Bearer ${state.token}` };
    const init = { method, headers, cache: 'no-store' };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(path, init);
    } catch (err) {
      throw new ApiError(0, 'network', `cannot reach the server (${err.message})`);
    }
    const text = await response.text();
    let data = null;
    if (text) {
      try {
        data = JSON.parse(text);
      } catch (_) {
        data = null;
      }
    }
    if (!response.ok) {
      const error = data && data.error && typeof data.error === 'object'
        ? data.error
        : { code: `http_${response.status}`, message: text.slice(0, 300) || response.statusText };
      if (response.status === 401) onUnauthorized(String(error.message));
      throw new ApiError(response.status, String(error.code), String(error.message));
    }
    return data;
  }

  const sessionPath = (id, rest = '') => `/v1/sessions/${encodeURIComponent(id)}${rest}`;

  function showApiError(what, err) {
    if (err instanceof ApiError && err.status === 401) return; // the token form says it
    const detail = err instanceof ApiError ? `${err.message} (${err.code})` : String(err);
    ui.apiError.textContent = `${what}: ${detail}`;
    ui.apiError.dataset.source = what;
    ui.apiError.hidden = false;
  }

  function clearApiError() {
    ui.apiError.hidden = true;
    ui.apiError.textContent = '';
    delete ui.apiError.dataset.source;
  }

  function setConnection(text) {
    ui.connection.textContent = text;
  }

  // ---------------------------------------------------------------------------------------------
  // Session list

  async function loadSessions() {
    let list;
    try {
      list = await api('GET', '/v1/sessions');
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 401)) setConnection('server unreachable');
      showApiError(LIST_FAILED, err);
      return;
    }
    setConnection('connected');
    if (ui.apiError.dataset.source === LIST_FAILED) clearApiError();
    const sessions = list && Array.isArray(list.sessions) ? list.sessions : [];
    renderSessionList(sessions);
    const current = sessions.find((s) => s.id === state.currentId);
    if (current) renderSessionHead(current);
  }

  function renderSessionList(sessions) {
    const items = sessions.map((session) => {
      const item = document.createElement('li');
      item.dataset.testid = 'session-item';
      item.dataset.sessionId = String(session.id);
      item.tabIndex = 0;
      if (session.id === state.currentId) item.classList.add('selected');
      const title = document.createElement('span');
      title.className = 'title';
      title.textContent = session.name || String(session.id);
      const meta = document.createElement('span');
      meta.className = 'meta';
      const parts = [session.executing ? 'running' : 'idle'];
      if (session.pending_permissions > 0) parts.push(`${session.pending_permissions} waiting for permission`);
      parts.push(String(session.cwd));
      meta.textContent = parts.join(' · ');
      item.append(title, meta);
      item.addEventListener('click', () => selectSession(session));
      item.addEventListener('keydown', (e) => {
        if (e.key === 'Enter') selectSession(session);
      });
      return item;
    });
    ui.sessionList.replaceChildren(...items);
    ui.noSessions.hidden = sessions.length > 0;
  }

  async function createSession(event) {
    event.preventDefault();
    const body = {};
    const cwd = ui.newSessionCwd.value.trim();
    const name = ui.newSessionName.value.trim();
    if (cwd) body.cwd = cwd;
    if (name) body.name = name;
    try {
      const session = await api('POST', '/v1/sessions', body);
      clearApiError();
      ui.newSessionName.value = '';
      await loadSessions();
      selectSession(session);
    } catch (err) {
      showApiError('Creating the session failed', err);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // The chosen session

  function selectSession(session) {
    if (state.streamController) state.streamController.abort();
    state.currentId = session.id;
    state.lastSeq = 0;
    state.answerBlock = null;
    state.thinkingBlock = null;
    state.tools.clear();
    state.permissions.clear();
    state.toolInputs.clear();
    ui.transcript.replaceChildren();
    state.followTranscript = true;
    ui.promptUsage.textContent = '–';
    ui.cost.textContent = '–';
    ui.noSessionSelected.hidden = true;
    ui.sessionView.hidden = false;
    for (const item of ui.sessionList.children) {
      item.classList.toggle('selected', item.dataset.sessionId === session.id);
    }
    renderSessionHead(session);
    setRunning(Boolean(session.executing));
    const controller = new AbortController();
    state.streamController = controller;
    streamEvents(session.id, controller.signal);
    refreshCost();
    ui.promptInput.focus();
  }

  function renderSessionHead(session) {
    ui.sessionName.textContent = session.name || 'unnamed session';
    ui.sessionId.textContent = String(session.id);
    ui.sessionCwd.textContent = String(session.cwd);
    if (session.context && typeof session.context === 'object') renderContext(session.context);
  }

  function setRunning(running) {
    ui.sessionState.textContent = running ? 'running' : 'idle';
    ui.sessionState.classList.toggle('running', running);
  }

  function setStreamState(text, cls) {
    ui.streamState.textContent = text;
    ui.streamState.className = `pill ${cls || ''}`;
  }

  /** After a prompt ends, the server says whether another (queued) one runs now. */
  async function refreshCurrentInfo() {
    const id = state.currentId;
    if (!id) return;
    const endsBefore = state.promptEnds;
    try {
      const info = await api('GET', sessionPath(id));
      if (state.currentId === id) {
        renderSessionHead(info);
        // The answer and the event stream race: a prompt end that arrived while this request
        // was out is newer than the answer's `executing: true`.
        if (!info.executing || state.promptEnds === endsBefore) setRunning(Boolean(info.executing));
      }
    } catch (_) {
      // The next list reload reports a server that went away.
    }
  }

  /** The session's tokens and cost so far, from its `cost` command. */
  async function refreshCost() {
    const id = state.currentId;
    if (!id) return;
    try {
      const result = await api('POST', sessionPath(id, '/commands'), { name: 'cost', args: '' });
      if (state.currentId !== id) return;
      const usage = result && result.data && result.data.usage;
      if (!usage) {
        ui.cost.textContent = 'unknown';
        return;
      }
      const cost = typeof usage.cost_usd === 'number'
        ? `$${usage.cost_usd.toFixed(4)}`
        : 'unknown (no price for this model)';
      ui.cost.textContent = `${cost} · ${formatCount(usage.input_tokens)} in / ${formatCount(usage.output_tokens)} out`;
    } catch (_) {
      // A session busy with a command keeps its last figure; the next prompt end asks again.
    }
  }

  async function submitPrompt(event) {
    event.preventDefault();
    const id = state.currentId;
    const text = ui.promptInput.value;
    if (!id || !text.trim()) return;
    // The prompt's first events can arrive before the POST answers: the prompt is shown, and a
    // new answer block begun, before it is sent.
    const entry = addEntry('user', 'user-prompt');
    entry.textContent = text;
    state.answerBlock = null;
    state.thinkingBlock = null;
    state.followTranscript = true;
    followTranscript();
    setRunning(true);
    try {
      const answer = await api('POST', sessionPath(id, '/prompts'), { text });
      clearApiError();
      if (ui.promptInput.value === text) ui.promptInput.value = '';
      entry.dataset.promptId = String(answer && answer.prompt_id);
      if (answer && answer.status === 'queued') {
        entry.append(element('span', 'notice', 'queued-note', ' (queued: runs when the current prompt ends)'));
      }
    } catch (err) {
      entry.remove();
      showApiError('Sending the prompt failed', err);
      refreshCurrentInfo();
    }
  }

  async function abortPrompt() {
    const id = state.currentId;
    if (!id) return;
    try {
      await api('POST', sessionPath(id, '/abort'));
      clearApiError();
    } catch (err) {
      showApiError('Abort failed', err);
    }
  }

  async function answerPermission(requestId, response, card) {
    const id = state.currentId;
    if (!id) return;
    for (const button of card.querySelectorAll('button')) button.disabled = true;
    setPermissionState(card, 'sending', response.type === 'deny' ? 'sending the denial…' : 'sending the approval…');
    try {
      await api('POST', sessionPath(id, `/permissions/${encodeURIComponent(requestId)}`), response);
      clearApiError();
      if (card.dataset.state === 'sending') {
        setPermissionState(card, 'answered', response.type === 'deny' ? 'denied' : 'allowed');
      }
    } catch (err) {
      showApiError('Answering the permission request failed', err);
      if (card.dataset.state === 'sending') {
        for (const button of card.querySelectorAll('button')) button.disabled = false;
        setPermissionState(card, 'pending', 'waiting for an answer');
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Event stream: fetch + Server-Sent Events, resumed with Last-Event-ID

  const sleep = (ms, signal) => new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });

  async function streamEvents(sessionId, signal) {
    let retryDelay = 500;
    while (!signal.aborted) {
      const headers = { Authorization: `Bearer ${state.token}`, Accept: 'text/event-stream' };
      let url = sessionPath(sessionId, '/events');
      if (state.lastSeq > 0) {
        headers['Last-Event-ID'] = String(state.lastSeq);
      } else {
        url += '?after=0';
      }
      setStreamState(state.lastSeq > 0 ? 'reconnecting' : 'connecting', 'down');
      try {
        const response = await fetch(url, { headers, signal, cache: 'no-store' });
        if (response.status === 401) {
          onUnauthorized('the event stream was refused');
          return;
        }
        if (response.status === 404) {
          setStreamState('session gone', 'down');
          addNotice('The server no longer hosts this session.');
          return;
        }
        if (!response.ok || !response.body) throw new Error(`HTTP ${response.status}`);
        setStreamState('live', 'live');
        retryDelay = 500;
        const closed = await readServerSentEvents(response.body, signal, dispatchServerSentEvent);
        if (closed) {
          setStreamState('closed', 'down');
          setRunning(false);
          return;
        }
      } catch (err) {
        if (signal.aborted) return;
        if (err && err.name === 'SseError') addNotice(`Event stream broken: ${err.message}; reconnecting.`);
      }
      if (signal.aborted) return;
      setStreamState('reconnecting', 'down');
      await sleep(retryDelay, signal);
      retryDelay = Math.min(retryDelay * 2, 8000);
    }
  }

  /**
   * Reads an SSE body, calling `onMessage({event, data, id})` per dispatched message. Returns
   * true when `onMessage` answers 'closed' (the session ended), false when the body ends.
   */
  async function readServerSentEvents(body, signal, onMessage) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    signal.addEventListener('abort', () => reader.cancel().catch(() => {}), { once: true });
    let buffer = '';
    let message = { event: '', data: [], id: null };
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return false;
      buffer += value;
      let start = 0;
      for (;;) {
        const lf = buffer.indexOf('\n', start);
        const cr = buffer.indexOf('\r', start);
        let end;
        let next;
        if (cr !== -1 && (lf === -1 || cr < lf)) {
          if (cr === buffer.length - 1) break; // maybe the first half of \r\n: wait for more
          end = cr;
          next = buffer[cr + 1] === '\n' ? cr + 2 : cr + 1;
        } else if (lf !== -1) {
          end = lf;
          next = lf + 1;
        } else {
          break;
        }
        const line = buffer.slice(start, end);
        start = next;
        if (line === '') {
          if (message.data.length > 0) {
            const outcome = onMessage({ event: message.event || 'message', data: message.data.join('\n'), id: message.id });
            if (outcome === 'closed') {
              reader.cancel().catch(() => {});
              return true;
            }
          }
          message = { event: '', data: [], id: null };
          continue;
        }
        if (line.startsWith(':')) continue; // keep-alive comment
        const colon = line.indexOf(':');
        const field = colon === -1 ? line : line.slice(0, colon);
        let fieldValue = colon === -1 ? '' : line.slice(colon + 1);
        if (fieldValue.startsWith(' ')) fieldValue = fieldValue.slice(1);
        if (field === 'event') message.event = fieldValue;
        else if (field === 'data') message.data.push(fieldValue);
        else if (field === 'id') message.id = fieldValue;
      }
      buffer = buffer.slice(start);
      if (buffer.length > MAX_SSE_BUFFER_CHARS) {
        const err = new Error('an event is larger than the monitor accepts');
        err.name = 'SseError';
        throw err;
      }
    }
  }

  function dispatchServerSentEvent(message) {
    if (message.event === 'session_closed') {
      addNotice('The session was closed on the server.');
      return 'closed';
    }
    let data;
    try {
      data = JSON.parse(message.data);
    } catch (_) {
      addError(`An event the monitor cannot read (${message.event}): ${message.data.slice(0, 200)}`);
      return undefined;
    }
    if (message.event === 'gap') {
      addNotice(`Events ${Number(data.missed_after) + 1}–${Number(data.resumed_at) - 1} are no longer buffered on the server and are missing here.`);
      loadPendingPermissions();
      return undefined;
    }
    if (data && typeof data === 'object') renderEvent(data);
    followTranscript();
    return undefined;
  }

  /** After a gap, the requests still waiting may be among the missed events. */
  async function loadPendingPermissions() {
    const id = state.currentId;
    if (!id) return;
    try {
      const answer = await api('GET', sessionPath(id, '/permissions'));
      if (state.currentId !== id || !answer || !Array.isArray(answer.pending)) return;
      for (const request of answer.pending) {
        if (request && !state.permissions.has(request.request_id)) renderPermissionRequest(request);
      }
    } catch (_) {
      // The stream goes on; a request missed here still times out on the server.
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Rendering events

  function renderEvent(event) {
    if (typeof event.seq === 'number') {
      if (event.seq <= state.lastSeq) return; // already shown (a resume may repeat events)
      state.lastSeq = event.seq;
    }
    switch (event.type) {
      case 'text_delta': {
        let text = String(event.text ?? '');
        // The engine separates the text of successive model calls with blank lines; here each
        // call's text has its own block already.
        if (!state.answerBlock) text = text.replace(/^\n+/, '');
        if (text) {
          state.thinkingBlock = null;
          if (!state.answerBlock) state.answerBlock = addEntry('assistant', 'assistant-text');
          state.answerBlock.append(text);
        }
        setRunning(true);
        break;
      }
      case 'thinking':
        state.answerBlock = null;
        if (!state.thinkingBlock) state.thinkingBlock = addEntry('thinking', 'thinking');
        state.thinkingBlock.append(String(event.text ?? ''));
        setRunning(true);
        break;
      case 'tool_start':
      case 'tool_end':
        state.answerBlock = null;
        state.thinkingBlock = null;
        renderTool(event.tool || {});
        setRunning(true);
        break;
      case 'permission_request':
        renderPermissionRequest(event);
        setRunning(true);
        break;
      case 'context_update':
        renderContext(event.state);
        break;
      case 'compaction':
        addNotice(`Context compacted (${event.trigger}): ${formatCount(event.tokens_before)} → ${formatCount(event.tokens_after)} tokens.`);
        break;
      case 'complete':
        renderPromptEnd('complete', 'Answer complete.', event);
        break;
      case 'interrupted':
        renderPromptEnd('interrupted', 'Interrupted: the prompt was aborted.', event);
        break;
      case 'refused': {
        const refusal = (event.outcome && event.outcome.refusal) || {};
        const detail = [refusal.category, refusal.explanation, refusal.text].filter(Boolean).join(' — ');
        renderPromptEnd('refused', `The model refused${detail ? `: ${detail}` : '.'}`, event);
        break;
      }
      case 'truncated':
        renderPromptEnd('truncated', 'The answer was cut off at the output token limit.', event);
        break;
      case 'error':
        addError(String(event.message ?? 'The prompt failed.'));
        renderPromptEnd('error', 'The prompt failed.', event);
        break;
      case 'todo_update':
        renderTodos(event.todos);
        break;
      case 'skill_activation': {
        const data = event.data || {};
        addNotice(`Skill ${data.skill_name ?? ''}: ${data.status ?? ''}${data.error ? ` (${data.error})` : ''}`);
        break;
      }
      case 'background_task_event': {
        const data = event.data || {};
        addNotice(`Background task ${data.task_kind ?? ''} ${data.kind ?? data.type ?? ''}: ${summarize(data)}`);
        break;
      }
      case 'session_recovered':
        addNotice(String(event.message ?? 'The session was recovered.'));
        break;
      case 'mcp_server_status': {
        const status = event.status || {};
        addNotice(`MCP server ${event.server}: ${status.state ?? summarize(status)}${status.reason ? ` (${status.reason})` : ''}`);
        break;
      }
      case 'session':
        renderSessionEvent(event.event || {});
        break;
      default:
        addNotice(`${event.type}: ${summarize(event)}`);
    }
  }

  function renderSessionEvent(inner) {
    if (inner.type === 'permission_resolved') {
      const card = state.permissions.get(inner.request_id);
      if (!card) return;
      const resolution = inner.resolution || {};
      let text;
      if (resolution.decision === 'allowed') text = `allowed (${resolution.scope ?? 'once'})`;
      else if (resolution.decision === 'denied') text = `denied: ${resolution.message ?? ''}`;
      else text = 'cancelled: the prompt ended before an answer';
      setPermissionState(card, String(resolution.decision || 'resolved'), text);
      for (const button of card.querySelectorAll('button')) button.remove();
      return;
    }
    switch (inner.type) {
      case 'assistant_message':
        return; // its text and tool calls were streamed already
      case 'context_loaded': {
        const files = Array.isArray(inner.files) ? inner.files : [];
        const warnings = Array.isArray(inner.warnings) ? inner.warnings : [];
        if (files.length === 0 && warnings.length === 0) return;
        const names = files.map((file) => (file && (file.path ?? file.name)) || summarize(file));
        addNotice(`Project context loaded: ${names.join(', ') || 'no files'}${warnings.length ? ` (${warnings.length} could not be read: ${summarize(warnings)})` : ''}`);
        return;
      }
      default: {
        const message = typeof inner.message === 'string'
          ? inner.message
          : inner.warning && typeof inner.warning.message === 'string' ? inner.warning.message : summarize(inner);
        addNotice(`${inner.type ?? 'session'}: ${message}`);
      }
    }
  }

  function renderTool(tool) {
    const id = String(tool.tool_use_id ?? '');
    let card = state.tools.get(id);
    if (!card) {
      card = addEntry('tool', 'tool-call');
      card.dataset.toolUseId = id;
      const head = element('div', 'head');
      head.append(
        element('span', 'name', 'tool-name'),
        element('span', 'arg', 'tool-arg'),
        element('span', 'tool-status', 'tool-status'),
      );
      card.append(head);
      state.tools.set(id, card);
      const input = state.toolInputs.get(id);
      if (input !== undefined) setToolInput(card, input);
    }
    card.dataset.toolName = String(tool.name ?? '');
    card.querySelector('[data-testid="tool-name"]').textContent = String(tool.name ?? '');
    card.querySelector('[data-testid="tool-arg"]').textContent = String(tool.first_arg ?? '');
    const status = tool.is_running ? 'running' : String(tool.result ?? 'done');
    const statusEl = card.querySelector('[data-testid="tool-status"]');
    statusEl.textContent = status;
    statusEl.className = `tool-status ${status}`;
    card.dataset.status = status;
    if (tool.diff_lines && tool.diff_lines.length > 0) {
      const diff = section(card, 'tool-diff', `diff${tool.diff_file ? ` of ${tool.diff_file}` : ''}`);
      diff.classList.add('diff');
      diff.replaceChildren(...tool.diff_lines.map((line) => {
        const text = String(line);
        const cls = text.startsWith('+') ? 'add' : text.startsWith('-') ? 'del' : 'ctx';
        return element('span', cls, null, text);
      }));
    }
    if (tool.tool_result_data != null) {
      section(card, 'tool-result', 'result').textContent = String(tool.tool_result_data);
    }
  }

  /** A labelled <pre> inside a card, created once. */
  function section(card, testId, label) {
    let pre = card.querySelector(`[data-testid="${testId}"]`);
    if (!pre) {
      const labelEl = element('div', 'notice', `${testId}-label`, label);
      pre = element('pre', '', testId);
      card.append(labelEl, pre);
    } else {
      card.querySelector(`[data-testid="${testId}-label"]`).textContent = label;
    }
    return pre;
  }

  function setToolInput(card, input) {
    section(card, 'tool-input', 'input').textContent = formatJson(input);
  }

  function renderPermissionRequest(request) {
    const requestId = String(request.request_id);
    if (state.permissions.has(requestId)) return;
    const toolUseId = String(request.tool_use_id ?? '');
    state.toolInputs.set(toolUseId, request.input);
    const toolCard = state.tools.get(toolUseId);
    if (toolCard) setToolInput(toolCard, request.input);

    const card = addEntry('permission', 'permission-request');
    card.dataset.requestId = requestId;
    card.dataset.toolName = String(request.tool_name ?? '');
    const title = element('div', 'name', 'permission-tool');
    title.textContent = `Permission needed: ${request.tool_name ?? 'a tool'}`;
    const reason = element('div', '', 'permission-reason', String(request.reason ?? ''));
    const input = element('pre', '', 'permission-input', formatJson(request.input));
    const status = element('div', 'notice', 'permission-state');
    const buttons = element('div', 'buttons');
    const allow = element('button', 'primary', 'permission-allow', 'Allow');
    allow.type = 'button';
    const deny = element('button', 'danger', 'permission-deny', 'Deny');
    deny.type = 'button';
    allow.addEventListener('click', () => answerPermission(requestId, { type: 'allow_once' }, card));
    deny.addEventListener('click', () => answerPermission(requestId, { type: 'deny', message: 'denied from the monitor' }, card));
    buttons.append(allow, deny);
    card.append(title, reason, input, buttons, status);
    state.permissions.set(requestId, card);
    setPermissionState(card, 'pending', 'waiting for an answer');
  }

  function setPermissionState(card, stateName, text) {
    card.dataset.state = stateName;
    card.querySelector('[data-testid="permission-state"]').textContent = text;
  }

  function renderPromptEnd(status, text, event) {
    state.promptEnds += 1;
    state.answerBlock = null;
    state.thinkingBlock = null;
    const entry = addEntry(`end ${status}`, 'prompt-end');
    entry.dataset.status = status;
    entry.textContent = text;
    if (event.context_state) renderContext(event.context_state);
    renderPromptUsage(event);
    setRunning(false);
    refreshCurrentInfo();
    loadSessions();
    refreshCost();
  }

  function renderPromptUsage(event) {
    const snapshot = event.usage;
    if (snapshot && typeof snapshot === 'object') {
      ui.promptUsage.textContent = `${formatCount(snapshot.prompt_tokens)} in / ${formatCount(snapshot.completion_tokens)} out`;
      return;
    }
    const usage = event.outcome && event.outcome.usage;
    if (usage && typeof usage === 'object') {
      ui.promptUsage.textContent = `${formatCount(usage.input_tokens)} in / ${formatCount(usage.output_tokens)} out`;
    }
  }

  function renderContext(context) {
    if (!context || typeof context !== 'object') return;
    const used = Number(context.used_tokens) || 0;
    const max = Number(context.max_tokens) || 0;
    const approx = context.estimated ? '≈ ' : '';
    if (max > 0) {
      const percent = Math.min(100, (Number(context.ratio) || used / max) * 100);
      ui.contextBar.value = percent;
      ui.contextUsage.textContent = `${approx}${formatCount(used)} / ${formatCount(max)} tokens (${percent.toFixed(1)}%)`;
    } else {
      ui.contextBar.value = 0;
      ui.contextUsage.textContent = `${approx}${formatCount(used)} tokens (window unknown)`;
    }
  }

  function renderTodos(todos) {
    if (!Array.isArray(todos)) return;
    const entry = addEntry('notice', 'todo-list');
    entry.append(element('div', '', null, 'Tasks:'));
    const list = element('ul');
    for (const todo of todos) {
      const mark = todo.status === 'completed' ? '✓' : todo.status === 'in_progress' ? '▸' : '○';
      list.append(element('li', '', null, `${mark} ${todo.content ?? ''}`));
    }
    entry.append(list);
  }

  function addNotice(text) {
    addEntry('notice', 'notice').textContent = text;
  }

  function addError(text) {
    addEntry('error-entry', 'error').textContent = text;
  }

  /** Appends one transcript entry. */
  function addEntry(cls, testId) {
    const list = ui.transcript;
    const entry = element('li', cls, testId);
    list.append(entry);
    while (list.childElementCount > MAX_TRANSCRIPT_ENTRIES) list.firstElementChild.remove();
    return entry;
  }

  /** Keeps the newest events in view unless the reader scrolled up to read older ones. */
  function followTranscript() {
    if (!state.followTranscript || state.scrollQueued) return;
    state.scrollQueued = true;
    requestAnimationFrame(() => {
      state.scrollQueued = false;
      ui.transcript.scrollTop = ui.transcript.scrollHeight;
    });
  }

  function element(tag, cls, testId, text) {
    const el = document.createElement(tag);
    if (cls) el.className = cls;
    if (testId) el.dataset.testid = testId;
    if (text !== undefined) el.textContent = text;
    return el;
  }

  function formatCount(n) {
    return (Number(n) || 0).toLocaleString('en-US');
  }

  function formatJson(value) {
    let text;
    try {
      text = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
    } catch (_) {
      text = String(value);
    }
    text = text === undefined ? '' : text;
    return text.length > MAX_INPUT_CHARS ? `${text.slice(0, MAX_INPUT_CHARS)}\n… (cut)` : text;
  }

  function summarize(value) {
    const text = formatJson(value).replace(/\s+/g, ' ');
    return text.length > 300 ? `${text.slice(0, 300)}…` : text;
  }

  // ---------------------------------------------------------------------------------------------
  // Start

  function stopEverything() {
    if (state.listTimer) clearInterval(state.listTimer);
    state.listTimer = null;
    if (state.streamController) state.streamController.abort();
    state.streamController = null;
    state.currentId = null;
    ui.sessionView.hidden = true;
    ui.noSessionSelected.hidden = false;
  }

  function start(token) {
    state.token = token;
    ui.tokenPanel.hidden = true;
    ui.monitor.hidden = false;
    ui.forgetToken.hidden = false;
    setConnection('connecting');
    loadSessions();
    state.listTimer = setInterval(() => {
      if (document.visibilityState === 'visible') loadSessions();
    }, SESSION_LIST_INTERVAL_MS);
  }

  ui.tokenForm.addEventListener('submit', (event) => {
    event.preventDefault();
    const token = ui.tokenInput.value.trim();
    if (!token) return;
    sessionStorage.setItem(TOKEN_KEY, token);
    ui.tokenInput.value = '';
    start(token);
  });
  ui.forgetToken.addEventListener('click', () => {
    sessionStorage.removeItem(TOKEN_KEY);
    showTokenForm('');
  });
  ui.refreshSessions.addEventListener('click', () => loadSessions());
  ui.newSessionForm.addEventListener('submit', createSession);
  ui.promptForm.addEventListener('submit', submitPrompt);
  ui.promptInput.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) ui.promptForm.requestSubmit();
  });
  ui.abort.addEventListener('click', abortPrompt);
  ui.transcript.addEventListener('scroll', () => {
    const list = ui.transcript;
    state.followTranscript = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
  });

  const token = readToken();
  if (token) start(token);
  else showTokenForm('');
})();
