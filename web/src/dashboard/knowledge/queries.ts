// The Knowledge tab's reads and writes, all through @botpress/client's
// Files family (x-bot-id, the signed-in member's token).
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { filesClient, type FileInfo } from '../api/client'
import { keys } from '../api/keys'
import { parley } from '../api/parley'

/** Statuses that change by themselves: the list is polled while one shows. */
const moving: FileInfo['status'][] = ['upload_pending', 'indexing_pending']

export function useFiles(ws: string, botId: string) {
  return useQuery({
    queryKey: keys.files(ws, botId),
    queryFn: () => filesClient(botId).listFiles({ pageSize: 100, sortField: 'createdAt', sortDirection: 'desc' }),
    refetchInterval: (q) => (q.state.data?.files.some((f) => moving.includes(f.status)) ? 1000 : false),
  })
}

export function usePassages(ws: string, botId: string, fileId: string) {
  return useQuery({
    queryKey: keys.passages(ws, botId, fileId),
    queryFn: () => filesClient(botId).listFilePassages({ id: fileId, pageSize: 100 }),
  })
}

export function useKnowledgeBases(ws: string, botId: string) {
  return useQuery({
    queryKey: keys.knowledgeBases(ws, botId),
    queryFn: () => filesClient(botId).listKnowledgeBases({ pageSize: 100 }),
  })
}

/** The content type a browser may not know (Markdown mostly). */
export function contentTypeOf(file: File): string {
  if (file.type) return file.type
  const ext = file.name.toLowerCase().split('.').pop() ?? ''
  const byExt: Record<string, string> = {
    md: 'text/markdown',
    markdown: 'text/markdown',
    txt: 'text/plain',
    html: 'text/html',
    htm: 'text/html',
    pdf: 'application/pdf',
    csv: 'text/csv',
    json: 'application/json',
  }
  return byExt[ext] ?? 'application/octet-stream'
}

/**
 * Uploads a browser file: upsertFile (the record, with its size, and an
 * upload URL), then the content PUT to that URL.
 */
export async function uploadFile(botId: string, file: File, key: string, opts: { index: boolean; tags: Record<string, string> }) {
  const contentType = contentTypeOf(file)
  const { file: f } = await filesClient(botId).upsertFile({ key, size: file.size, contentType, index: opts.index, tags: opts.tags })
  await parley.upload(f.uploadUrl, file, contentType)
  return f
}

export function useUpload(ws: string, botId: string) {
  const qc = useQueryClient()
  return useMutation({
    mutationFn: async (input: { files: File[]; index: boolean; tags: Record<string, string> }) => {
      for (const file of input.files) await uploadFile(botId, file, file.name, input)
    },
    onSettled: () => qc.invalidateQueries({ queryKey: keys.files(ws, botId) }),
  })
}

export function useDeleteFile(ws: string, botId: string) {
  const qc = useQueryClient()
  return useMutation({
    mutationFn: (id: string) => filesClient(botId).deleteFile({ id }),
    onSuccess: () => qc.invalidateQueries({ queryKey: keys.files(ws, botId) }),
  })
}

export function useCreateKnowledgeBase(ws: string, botId: string) {
  const qc = useQueryClient()
  return useMutation({
    mutationFn: (input: { name: string; tags: Record<string, string> }) => filesClient(botId).createKnowledgeBase(input),
    onSuccess: () => qc.invalidateQueries({ queryKey: keys.knowledgeBases(ws, botId) }),
  })
}

export function useDeleteKnowledgeBase(ws: string, botId: string) {
  const qc = useQueryClient()
  return useMutation({
    mutationFn: (id: string) => filesClient(botId).deleteKnowledgeBase({ id }),
    onSuccess: () => qc.invalidateQueries({ queryKey: keys.knowledgeBases(ws, botId) }),
  })
}

/**
 * Tags typed as "key=value, key2=value2". Returns the tags, or the first
 * part that is not key=value.
 */
export function parseTags(text: string): { tags: Record<string, string>; bad?: string } {
  const tags: Record<string, string> = {}
  for (const part of text.split(',')) {
    const p = part.trim()
    if (!p) continue
    const i = p.indexOf('=')
    if (i <= 0 || i === p.length - 1) return { tags, bad: p }
    tags[p.slice(0, i).trim()] = p.slice(i + 1).trim()
  }
  return { tags }
}

export const formatTags = (tags: Record<string, string>) =>
  Object.entries(tags)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ')

/** Whether a file carries every tag of a knowledge base. */
export const covers = (kbTags: Record<string, string>, fileTags: Record<string, string>) =>
  Object.entries(kbTags).every(([k, v]) => fileTags[k] === v)
