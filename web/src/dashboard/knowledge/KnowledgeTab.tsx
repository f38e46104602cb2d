import { useId, useState } from 'react'
import { useQuery } from '@tanstack/react-query'
import { filesClient, type Bot, type FileInfo, type KnowledgeBase } from '../api/client'
import { keys } from '../api/keys'
import { ErrorBox } from '../ui/ErrorBox'
import { QueryState } from '../ui/QueryState'
import { FilesCard } from './FilesCard'
import { covers, formatTags, parseTags, useCreateKnowledgeBase, useDeleteKnowledgeBase, useFiles, useKnowledgeBases } from './queries'

/** The bot's documents: files and their indexing, knowledge bases, and a search to try. */
export function KnowledgeTab({ ws, bot }: { ws: string; bot: Bot }) {
  const kbs = useKnowledgeBases(ws, bot.id)
  const files = useFiles(ws, bot.id)
  const list = kbs.data?.knowledgeBases ?? []
  return (
    <>
      <p className="muted">
        A knowledge base is a set of files chosen by their tags. For each message, the bot&apos;s code receives the best passages of
        its knowledge bases in <code>event.kb</code>, and can call <code>client.searchFiles</code>.
      </p>
      <FilesCard ws={ws} botId={bot.id} kbs={list} />
      <div className="grid">
        <KnowledgeBasesCard ws={ws} botId={bot.id} query={kbs} files={files.data?.files ?? []} />
        <SearchCard botId={bot.id} ws={ws} kbs={list} />
      </div>
    </>
  )
}

function KnowledgeBasesCard({
  ws,
  botId,
  query,
  files,
}: {
  ws: string
  botId: string
  query: ReturnType<typeof useKnowledgeBases>
  files: FileInfo[]
}) {
  const create = useCreateKnowledgeBase(ws, botId)
  const del = useDeleteKnowledgeBase(ws, botId)
  const [name, setName] = useState('')
  const [tagText, setTagText] = useState('')
  const id = useId()
  // Without tags typed, the base covers the files tagged kb=<its name>.
  const slug = name.trim().toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '')
  const parsed = tagText.trim() ? parseTags(tagText) : { tags: slug ? { kb: slug } : {} }
  return (
    <div className="card">
      <h2>Knowledge bases</h2>
      <form
        className="stack-form"
        onSubmit={(e) => {
          e.preventDefault()
          if (!name.trim() || parsed.bad) return
          create.mutate(
            { name: name.trim(), tags: parsed.tags },
            {
              onSuccess: () => {
                setName('')
                setTagText('')
              },
            },
          )
        }}
      >
        <div>
          <label htmlFor={`${id}-name`}>Name</label>
          <input id={`${id}-name`} value={name} onChange={(e) => setName(e.target.value)} placeholder="FAQ" required />
        </div>
        <div>
          <label htmlFor={`${id}-tags`}>Files tagged</label>
          <input
            id={`${id}-tags`}
            value={tagText}
            onChange={(e) => setTagText(e.target.value)}
            placeholder={slug ? `kb=${slug}` : 'kb=faq'}
            aria-describedby={`${id}-hint`}
          />
          <p className="muted small" id={`${id}-hint`}>
            {parsed.bad ? <span className="field-error">“{parsed.bad}” is not key=value.</span> : 'Upload files to this base, or give them these tags.'}
          </p>
        </div>
        <button type="submit" disabled={create.isPending || !name.trim() || !!parsed.bad}>
          {create.isPending ? 'Creating…' : 'Create knowledge base'}
        </button>
        {create.error && <ErrorBox error={create.error} />}
      </form>
      {del.error && <ErrorBox error={del.error} />}
      <QueryState
        query={query}
        what="knowledge bases"
        isEmpty={(d) => d.knowledgeBases.length === 0}
        empty={<p className="empty">No knowledge bases yet: the bot answers from none.</p>}
      >
        {(d) => (
          <ul className="token-list">
            {d.knowledgeBases.map((k) => {
              const n = files.filter((f) => covers(k.tags, f.tags)).length
              return (
                <li key={k.id}>
                  <span>
                    <strong>{k.name}</strong>{' '}
                    <span className="muted small">
                      {formatTags(k.tags) || 'every file'} · {n} {n === 1 ? 'file' : 'files'}
                    </span>
                  </span>
                  <button type="button" className="secondary" aria-label={`Delete knowledge base ${k.name}`} onClick={() => del.mutate(k.id)}>
                    Delete
                  </button>
                </li>
              )
            })}
          </ul>
        )}
      </QueryState>
    </div>
  )
}

function SearchCard({ ws, botId, kbs }: { ws: string; botId: string; kbs: KnowledgeBase[] }) {
  const [text, setText] = useState('')
  const [kb, setKb] = useState('')
  const [asked, setAsked] = useState<{ query: string; kb: string }>()
  const id = useId()
  const search = useQuery({
    queryKey: keys.search(ws, botId, asked?.query ?? '', asked?.kb ?? ''),
    queryFn: () => {
      const tags = kbs.find((k) => k.id === asked?.kb)?.tags
      return filesClient(botId).searchFiles({ query: asked?.query ?? '', includeBreadcrumb: true, limit: 10, ...(tags ? { tags } : {}) })
    },
    enabled: !!asked,
  })
  return (
    <div className="card">
      <h2>Try a search</h2>
      <form
        className="stack-form"
        role="search"
        onSubmit={(e) => {
          e.preventDefault()
          if (text.trim()) setAsked({ query: text.trim(), kb })
        }}
      >
        <div>
          <label htmlFor={`${id}-q`}>Question</label>
          <input id={`${id}-q`} type="search" value={text} onChange={(e) => setText(e.target.value)} placeholder="How long do refunds take?" />
        </div>
        <div>
          <label htmlFor={`${id}-kb`}>Search in</label>
          <select id={`${id}-kb`} value={kb} onChange={(e) => setKb(e.target.value)}>
            <option value="">all files</option>
            {kbs.map((k) => (
              <option key={k.id} value={k.id}>
                {k.name}
              </option>
            ))}
          </select>
        </div>
        <button type="submit" disabled={!text.trim()}>
          Search
        </button>
      </form>
      {asked && (
        <QueryState
          query={search}
          what="passages"
          isEmpty={(d) => d.passages.length === 0}
          empty={<p className="empty">No passage matches “{asked.query}”.</p>}
        >
          {(d) => (
            <ol className="hits" aria-label="Search results">
              {d.passages.map((p, i) => {
                const crumb = p.context?.find((c) => c.type === 'breadcrumb')?.text
                return (
                  <li key={`${p.file.id}-${p.meta.position ?? i}`}>
                    <div className="hit-head">
                      <span className="badge info">#{i + 1}</span>
                      <span className="muted small">
                        score {Number(p.score.toPrecision(2))} · {p.file.key}
                        {crumb && <> · {crumb}</>}
                      </span>
                    </div>
                    <p>{p.content}</p>
                  </li>
                )
              })}
            </ol>
          )}
        </QueryState>
      )}
    </div>
  )
}
