// A CodeMirror 6 editor for JavaScript (and JSON): line numbers,
// highlighting, an error line marked (a line class, a gutter marker and a
// lint diagnostic with the message), optionally read-only.
import { useEffect, useRef } from 'react'
import { basicSetup } from 'codemirror'
import { javascript } from '@codemirror/lang-javascript'
import { lintGutter, setDiagnostics } from '@codemirror/lint'
import { EditorState, StateEffect, StateField, type Extension } from '@codemirror/state'
import { Decoration, EditorView, keymap, type DecorationSet } from '@codemirror/view'
import { indentWithTab } from '@codemirror/commands'

export type CodeError = { line: number; column?: number; message: string }

const setErrorLine = StateEffect.define<number | null>()

/** The line of the last compile error, marked until the next deploy. */
const errorLine = StateField.define<DecorationSet>({
  create: () => Decoration.none,
  update(deco, tr) {
    deco = deco.map(tr.changes)
    for (const e of tr.effects) {
      if (!e.is(setErrorLine)) continue
      if (e.value === null || e.value < 1 || e.value > tr.state.doc.lines) deco = Decoration.none
      else deco = Decoration.set([Decoration.line({ class: 'cm-error-line' }).range(tr.state.doc.line(e.value).from)])
    }
    return deco
  },
  provide: (f) => EditorView.decorations.from(f),
})

type Props = {
  id: string
  value: string
  onChange?: (value: string) => void
  readOnly?: boolean
  error?: CodeError | null
  label: string
  describedBy?: string
}

export function Editor({ id, value, onChange, readOnly = false, error = null, label, describedBy }: Props) {
  const host = useRef<HTMLDivElement>(null)
  const view = useRef<EditorView | null>(null)
  const change = useRef(onChange)
  useEffect(() => {
    change.current = onChange
  }, [onChange])

  // One view per mount; the value below keeps it in step with the prop.
  useEffect(() => {
    const extensions: Extension[] = [
      basicSetup,
      javascript(),
      lintGutter(),
      errorLine,
      EditorState.readOnly.of(readOnly),
      EditorView.editable.of(!readOnly),
      EditorView.contentAttributes.of({
        id,
        'aria-label': label,
        ...(describedBy ? { 'aria-describedby': describedBy } : {}),
        ...(readOnly ? { 'aria-readonly': 'true' } : {}),
      }),
      EditorView.updateListener.of((u) => {
        if (u.docChanged) change.current?.(u.state.doc.toString())
      }),
    ]
    // Tab indents; Escape then Tab leaves the editor (CodeMirror's own rule).
    if (!readOnly) extensions.push(keymap.of([indentWithTab]))
    const v = new EditorView({ parent: host.current!, state: EditorState.create({ doc: value, extensions }) })
    view.current = v
    return () => {
      v.destroy()
      view.current = null
    }
    // The view is made once; value and error are applied by the effects below.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [id, readOnly])

  useEffect(() => {
    const v = view.current
    if (v && v.state.doc.toString() !== value) v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: value } })
  }, [value])

  useEffect(() => {
    const v = view.current
    if (!v) return
    const doc = v.state.doc
    if (!error || error.line < 1 || error.line > doc.lines) {
      v.dispatch(setDiagnostics(v.state, []), { effects: setErrorLine.of(null) })
      return
    }
    const line = doc.line(error.line)
    const from = Math.min(line.from + Math.max(0, (error.column ?? 1) - 1), line.to)
    v.dispatch(setDiagnostics(v.state, [{ from, to: line.to, severity: 'error', message: error.message }]), {
      effects: setErrorLine.of(error.line),
      selection: { anchor: from },
      scrollIntoView: true,
    })
  }, [error])

  return <div ref={host} className={readOnly ? 'editor read-only' : 'editor'} />
}
