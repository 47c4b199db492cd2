// Try-a-tool forms, generated from the contract's input schemas
// (/console/contract.json, the OpenAPI document as JSON).

import { el, withCode } from './dom.js';

// The agent routes the console can call, in the contract's order: the
// eight tools, then describe_handle and the result writer.
export const AGENT_ROUTES = [
  'loom_search', 'loom_page_discover', 'loom_page_inspect', 'loom_page_read',
  'loom_people', 'loom_calendar_list', 'loom_context', 'loom_profile',
  'describe_handle', 'result',
];

export function resolve(contract, schema) {
  let s = schema;
  for (let i = 0; s && s.$ref && i < 16; i++) {
    const parts = s.$ref.replace(/^#\//, '').split('/');
    s = parts.reduce((o, k) => (o ? o[k.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined), contract);
  }
  return s || {};
}

export function operation(contract, tool) {
  const item = contract && contract.paths && contract.paths[`/v1/runs/{runId}/${tool}`];
  return item && item.post;
}

// toolIds is the contract's ToolId enum (the eight retrieval tools).
export function toolIds(contract) {
  const s = contract && contract.components && contract.components.schemas && contract.components.schemas.ToolId;
  return (s && s.enum) || AGENT_ROUTES.slice(0, 8);
}

function exampleOf(op) {
  const c = op && op.requestBody && op.requestBody.content && op.requestBody.content['application/json'];
  return (c && c.example) || {};
}

// build fills container with one field per property of the tool's input
// schema and returns collect(), which reads the fields into the request
// body (unset fields are left out) or throws an Error naming the field.
export function build(contract, tool, container) {
  const op = operation(contract, tool);
  container.replaceChildren();
  if (!op) {
    container.append(el('p', { className: 'error' }, `The contract has no route for ${tool}.`));
    return () => { throw new Error(`no route for ${tool}`); };
  }
  const c = op.requestBody.content['application/json'];
  const schema = resolve(contract, c.schema);
  const example = exampleOf(op);
  const required = new Set(schema.required || []);
  const props = Object.entries(schema.properties || {});
  const readers = [];
  // A description several fields share (the Text type's) is shown once
  // under the fields, not under each.
  const descOf = (raw) => resolve(contract, raw).description || '';
  const seen = new Map();
  for (const [name, raw] of props) {
    const d = descOf(raw);
    if (d) seen.set(d, [...(seen.get(d) || []), name]);
  }
  if (props.length === 0) container.append(el('p', { className: 'muted' }, 'This tool takes no input; it sends {}.'));
  for (const [name, raw] of props) {
    const s = resolve(contract, raw);
    const id = `f-${tool}-${name}`;
    const req = required.has(name);
    const ex = example[name];
    let input;
    let read;
    const hintBits = [];
    if (s.description && seen.get(s.description).length === 1) hintBits.push(s.description);
    if (s.enum) {
      input = el('select', { id, name },
        el('option', { value: '' }, req ? '(choose)' : '(unset)'),
        s.enum.map((v) => el('option', { value: String(v) }, String(v))));
      read = () => (input.value === '' ? undefined : input.value);
    } else if (s.type === 'boolean') {
      input = el('select', { id, name },
        el('option', { value: '' }, '(unset)'), el('option', { value: 'true' }, 'true'), el('option', { value: 'false' }, 'false'));
      read = () => (input.value === '' ? undefined : input.value === 'true');
    } else if (s.type === 'integer' || s.type === 'number') {
      input = el('input', { id, name, type: 'text', inputMode: 'numeric', spellcheck: false, placeholder: ex !== undefined ? String(ex) : '' });
      if (s.minimum !== undefined || s.maximum !== undefined) hintBits.push(`${s.minimum ?? '…'} to ${s.maximum ?? '…'}`);
      read = () => {
        const v = input.value.trim();
        if (v === '') return undefined;
        const n = Number(v);
        // A value that is not a number is sent as typed, so the gateway's
        // own invalid_input answer shows.
        return Number.isFinite(n) && /^-?\d+(\.\d+)?$/.test(v) ? n : v;
      };
    } else if (s.type === 'string') {
      input = el('input', { id, name, type: 'text', spellcheck: false, placeholder: ex !== undefined ? String(ex) : '' });
      if (s.pattern) hintBits.push(`pattern ${s.pattern}`);
      read = () => (input.value === '' ? undefined : input.value);
    } else {
      // Any JSON value (the result writer's value).
      input = el('textarea', { id, name, rows: 4, spellcheck: false, placeholder: ex !== undefined ? JSON.stringify(ex) : 'JSON' });
      hintBits.push('any JSON value');
      read = () => {
        const v = input.value.trim();
        if (v === '') return undefined;
        try {
          return JSON.parse(v);
        } catch {
          throw new Error(`${name}: not valid JSON`);
        }
      };
    }
    readers.push([name, read]);
    if (s.description) input.title = s.description.replaceAll('`', '');
    container.append(el('div', { className: 'field' },
      el('label', { for: id }, name, req ? el('span', { className: 'req', title: 'required' }, ' *') : null),
      input,
      hintBits.length ? el('p', { className: 'hint' }, withCode(hintBits.join(' · '))) : null));
  }
  for (const [d, names] of seen) {
    if (names.length > 1) container.append(el('p', { className: 'hint shared' }, `${names.join(', ')}: `, withCode(d)));
  }
  return () => {
    const body = {};
    for (const [name, read] of readers) {
      const v = read();
      if (v !== undefined) body[name] = v;
    }
    return body;
  };
}

export function describe(contract, tool) {
  const op = operation(contract, tool);
  return op ? (op.description || op.summary || '').trim() : '';
}
