// The Tables tab's reads and writes, through @botpress/client's Tables
// family (x-bot-id, the signed-in member's token).
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { filesClient, tablesClient, type BotInputs, type TableJob } from '../api/client'
import { keys } from '../api/keys'
import { parley } from '../api/parley'
import { uploadFile } from '../knowledge/queries'

export function useTables(ws: string, botId: string) {
  return useQuery({ queryKey: keys.tables(ws, botId), queryFn: () => tablesClient(botId).listTables({}) })
}

export function useTable(ws: string, botId: string, table: string) {
  return useQuery({ queryKey: keys.table(ws, botId, table), queryFn: () => tablesClient(botId).getTable({ table }) })
}

export type RowQuery = Omit<BotInputs['findTableRows'], 'table'>

export function useRows(ws: string, botId: string, table: string, q: RowQuery) {
  return useQuery({
    queryKey: keys.rows(ws, botId, table, q),
    queryFn: () => tablesClient(botId).findTableRows({ table, ...q }),
    placeholderData: (prev) => prev,
  })
}

export function useJobs(ws: string, botId: string, table: string) {
  return useQuery({
    queryKey: keys.jobs(ws, botId, table),
    queryFn: async () => (await tablesClient(botId).getTableJobs({ table })).jobs as TableJob[],
  })
}

/** Reads the table again: its row count, its rows, its jobs, the list. */
export function useReloadTable(ws: string, botId: string, table: string) {
  const qc = useQueryClient()
  return () =>
    Promise.all([
      qc.invalidateQueries({ queryKey: keys.table(ws, botId, table) }),
      qc.invalidateQueries({ queryKey: keys.tables(ws, botId), exact: true }),
    ])
}

export function useCreateTable(ws: string, botId: string) {
  const qc = useQueryClient()
  return useMutation({
    mutationFn: (input: BotInputs['createTable']) => tablesClient(botId).createTable(input),
    onSuccess: () => qc.invalidateQueries({ queryKey: keys.tables(ws, botId), exact: true }),
  })
}

export function useDeleteTable(ws: string, botId: string) {
  const qc = useQueryClient()
  return useMutation({
    mutationFn: (table: string) => tablesClient(botId).deleteTable({ table }),
    onSuccess: () => qc.invalidateQueries({ queryKey: keys.tables(ws, botId), exact: true }),
  })
}

/** Writes to rows; each reloads the table after. */
export function useRowWrites(ws: string, botId: string, table: string) {
  const reload = useReloadTable(ws, botId, table)
  const c = () => tablesClient(botId)
  return {
    create: useMutation({
      mutationFn: (row: Record<string, unknown>) => c().createTableRows({ table, rows: [row] }),
      onSuccess: reload,
    }),
    update: useMutation({
      mutationFn: (row: Record<string, unknown> & { id: number }) => c().updateTableRows({ table, rows: [row] }),
      onSuccess: reload,
    }),
    remove: useMutation({
      mutationFn: (ids: number[]) => c().deleteTableRows({ table, ids }),
      onSuccess: reload,
    }),
  }
}

/**
 * Export as CSV: exportTable makes a job whose output Parley keeps; the
 * content is read and handed to the browser as a download.
 */
export function useExport(ws: string, botId: string, table: string) {
  const qc = useQueryClient()
  return useMutation({
    mutationFn: async () => {
      const { job } = await tablesClient(botId).exportTable({ table, format: 'csv' })
      const j = job as TableJob
      if (j.status !== 'completed') throw new Error(`The export ${j.status}${j.error ? `: ${j.error}` : ''}`)
      const csv = await parley.exportOutput(botId, table, j.id)
      return { job: j, csv }
    },
    onSettled: () => qc.invalidateQueries({ queryKey: keys.jobs(ws, botId, table) }),
  })
}

/**
 * Import a CSV (or JSON) file: uploaded with the Files API (upsertFile and
 * its upload URL), then importTable with its id; the job says whether the
 * rows went in (all or none) and why not. The uploaded file is deleted
 * afterwards: the rows are the table's now.
 */
export function useImport(ws: string, botId: string, table: string) {
  const reload = useReloadTable(ws, botId, table)
  const qc = useQueryClient()
  return useMutation({
    mutationFn: async (file: File) => {
      const key = `table-imports/${table}/${new Date().toISOString()}-${file.name}`
      const f = await uploadFile(botId, file, key, { index: false, tags: { purpose: 'table-import' } })
      try {
        const { job } = await tablesClient(botId).importTable({ table, fileId: f.id })
        const j: TableJob = job
        return j
      } finally {
        await filesClient(botId)
          .deleteFile({ id: f.id })
          .catch(() => undefined)
      }
    },
    onSettled: () => Promise.all([reload(), qc.invalidateQueries({ queryKey: keys.jobs(ws, botId, table) })]),
  })
}
