import { useState } from 'react'
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import type { Bot } from '../api/client'
import { keys } from '../api/keys'
import { support } from '../api/support'
import { duration, when } from '../ui/format'
import { ErrorBox } from '../ui/ErrorBox'

function useHandoff(ws: string, bot: Bot, conversationId: string) {
  const qc = useQueryClient()
  const handoff = useQuery({
    queryKey: keys.handoff(ws, bot.id, conversationId),
    queryFn: ({ signal }) => support.getHandoff(ws, bot.id, conversationId, signal),
    refetchInterval: 3000,
  })
  const refresh = () =>
    Promise.all([
      qc.invalidateQueries({ queryKey: keys.handoffs(ws, bot.id) }),
      qc.invalidateQueries({ queryKey: keys.messages(ws, bot.id, conversationId) }),
    ])
  return { handoff, refresh }
}

/**
 * Human handoff in the conversation view, above the transcript: whether
 * the bot or a person answers, Take over and Hand back. While a
 * conversation is in handoff the bot's turns in it are skipped.
 */
export function HandoffBar({ ws, bot, conversationId }: { ws: string; bot: Bot; conversationId: string }) {
  const { handoff, refresh } = useHandoff(ws, bot, conversationId)
  const takeOver = useMutation({ mutationFn: () => support.takeOver(ws, bot.id, conversationId), onSuccess: refresh })
  const handBack = useMutation({ mutationFn: () => support.handBack(ws, bot.id, conversationId), onSuccess: refresh })
  const h = handoff.data
  const error = handoff.error ?? takeOver.error ?? handBack.error
  return (
    <section className="handoff" aria-label="Human handoff">
      {handoff.isPending ? null : !h ? (
        <div className="handoff-bar">
          <span>
            <strong>{bot.name}</strong> answers this conversation.
          </span>
          <button type="button" onClick={() => takeOver.mutate()} disabled={takeOver.isPending}>
            Take over
          </button>
        </div>
      ) : h.status === 'waiting' ? (
        <div className="handoff-bar waiting" role="status">
          <span>
            <strong>Waiting for a person</strong> for {duration(h.waitingMs)}
            {h.reason && <> — “{h.reason}”</>}. The bot is paused.
          </span>
          <button type="button" onClick={() => takeOver.mutate()} disabled={takeOver.isPending}>
            Take over
          </button>
        </div>
      ) : (
        <div className="handoff-bar active" role="status">
          <span>
            <strong>{h.agent?.name ?? 'An agent'}</strong> took this conversation over {when(h.takenAt ?? undefined)}. The bot is
            paused.
          </span>
          <button type="button" className="secondary" onClick={() => handBack.mutate()} disabled={handBack.isPending}>
            Hand back
          </button>
        </div>
      )}
      {error && <ErrorBox error={error} />}
    </section>
  )
}

/** The operator's reply box, below the transcript, while the conversation is taken over. */
export function HandoffReply({ ws, bot, conversationId }: { ws: string; bot: Bot; conversationId: string }) {
  const { handoff, refresh } = useHandoff(ws, bot, conversationId)
  const [text, setText] = useState('')
  const reply = useMutation({
    mutationFn: (t: string) => support.reply(ws, bot.id, conversationId, { type: 'text', text: t }),
    onSuccess: () => {
      setText('')
      return refresh()
    },
  })
  const h = handoff.data
  if (!h || h.status !== 'active') return null
  return (
    <form
      className="handoff-reply"
      onSubmit={(e) => {
        e.preventDefault()
        if (text.trim()) reply.mutate(text.trim())
      }}
    >
      <label htmlFor="agent-reply">Reply as {h.agent?.name ?? 'agent'}</label>
      <div className="row">
        <input
          id="agent-reply"
          value={text}
          onChange={(e) => setText(e.target.value)}
          placeholder="Type your answer to the user"
          autoComplete="off"
        />
        <button type="submit" disabled={reply.isPending || !text.trim()}>
          Reply
        </button>
      </div>
      {reply.error && <ErrorBox error={reply.error} />}
    </form>
  )
}
