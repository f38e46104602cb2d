// Drives every Tables operation of @botpress/client 1.45.0 against Parley,
// each asserted on its result; then the refusals, with the client's error
// classes and nothing written: invalid rows, unknown columns, malformed
// filters, another bot's table, an oversized body (> 40 MB), the row and
// column caps, no credential.
// Env: API_URL, BOT_ID, OTHER_BOT_ID, BOT_KEY, OTHER_BOT_KEY, OWNER_TOKEN, VIEWER_TOKEN.
import * as bp from '@botpress/client'
import { scenario, rejects, finish, env, assert } from './lib.mjs'

const apiUrl = env('API_URL')
const botId = env('BOT_ID')
const mk = (token, id = botId) => new bp.Client({ apiUrl, botId: id, token })
const bot = mk(env('BOT_KEY'))
const owner = mk(env('OWNER_TOKEN'))
const viewer = mk(env('VIEWER_TOKEN'))
const otherBot = mk(env('OTHER_BOT_KEY'), env('OTHER_BOT_ID'))
const otherKey = mk(env('OTHER_BOT_KEY'))
const anon = mk(undefined)

const schema = {
  type: 'object',
  properties: {
    sku: { type: 'string', 'x-zui': { searchable: true } },
    title: { type: 'string', 'x-zui': { searchable: true } },
    price: { type: 'number' },
    inStock: { type: 'boolean' },
    category: { type: 'string', nullable: true },
  },
  required: ['sku'],
}
const products = [
  { sku: 'A-1', title: 'Red kettle', price: 30, inStock: true, category: 'kitchen' },
  { sku: 'A-2', title: 'Blue kettle', price: 35, inStock: false, category: 'kitchen' },
  { sku: 'B-1', title: 'Desk lamp', price: 20, inStock: true, category: 'office' },
  { sku: 'B-2', title: 'Chair', price: 120, inStock: true, category: 'office' },
  { sku: 'C-1', title: 'Mystery box', price: 5, inStock: false, category: null },
]
const ids = (rows) => rows.map((r) => r.id)

await scenario('createTable, getTable, listTables', async () => {
  const { table } = await bot.createTable({ name: 'ProductsTable', schema, keyColumn: 'sku', tags: { team: 'shop' } })
  assert.equal(table.name, 'ProductsTable')
  assert.equal(table.keyColumn, 'sku')
  assert.deepEqual(Object.keys(table.schema.properties).sort(), ['category', 'inStock', 'price', 'sku', 'title'])
  assert.equal(table.schema.properties.price['x-zui'].index, 2)
  const got = await bot.getTable({ table: table.id })
  assert.equal(got.table.id, table.id)
  assert.equal(got.rows, 0)
  const byName = await viewer.getTable({ table: 'ProductsTable' })
  assert.equal(byName.table.id, table.id)
  const { tables } = await bot.listTables({ tags: { team: 'shop' } })
  assert.deepEqual(tables.map((t) => t.name), ['ProductsTable'])
  assert.deepEqual((await bot.listTables({ tags: { team: 'none' } })).tables, [])
})

await scenario('getOrCreateTable, updateTable', async () => {
  const a = await bot.getOrCreateTable({ table: 'LeadsTable', schema: { type: 'object', properties: { email: { type: 'string' } } } })
  assert.equal(a.created, true)
  const b = await bot.getOrCreateTable({ table: 'LeadsTable', schema: { type: 'object', properties: {} } })
  assert.equal(b.created, false)
  assert.equal(b.table.id, a.table.id)
  const { table } = await bot.updateTable({ table: 'LeadsTable', name: 'ProspectsTable', frozen: true, tags: { k: 'v' } })
  assert.equal(table.name, 'ProspectsTable')
  assert.equal(table.frozen, true)
  assert.deepEqual(table.tags, { k: 'v' })
  await rejects(bot.updateTable({ table: 'ProspectsTable', schema: { type: 'object', properties: {} } }), bp.InvalidPayloadError, 'frozen schema')
})

await scenario('createTableRows, getTableRow', async () => {
  const { rows } = await bot.createTableRows({ table: 'ProductsTable', rows: products })
  assert.deepEqual(ids(rows), [1, 2, 3, 4, 5])
  assert.equal(rows[0].sku, 'A-1')
  assert.ok(rows[0].createdAt)
  const { row } = await bot.getTableRow({ table: 'ProductsTable', id: 3 })
  assert.equal(row.title, 'Desk lamp')
  assert.deepEqual(row.computed, {})
  assert.equal((await bot.getTable({ table: 'ProductsTable' })).rows, 5)
})

await scenario('findTableRows: filter, order, page, select, search, group', async () => {
  const f = (body) => bot.findTableRows({ table: 'ProductsTable', ...body })
  let r = await f({ filter: { $and: [{ inStock: true }, { price: { $lt: 100 } }] } })
  assert.deepEqual(ids(r.rows), [1, 3])
  r = await f({ filter: { $or: [{ category: { $in: ['office'] } }, { $not: { category: { $exists: true } } }] }, orderBy: 'price', orderDirection: 'desc' })
  assert.deepEqual(ids(r.rows), [4, 3, 5])
  r = await f({ filter: { title: { $regex: 'kettle$' } } })
  assert.deepEqual(ids(r.rows), [1, 2])
  r = await f({ limit: 2, offset: 1 })
  assert.deepEqual(ids(r.rows), [2, 3])
  assert.equal(r.hasMore, true)
  assert.equal(r.limit, 2)
  r = await f({ select: ['sku'], filter: { sku: 'B-2' } })
  assert.equal(r.rows[0].sku, 'B-2')
  assert.equal(r.rows[0].title, undefined)
  r = await f({ search: 'KETTLE' })
  assert.deepEqual(ids(r.rows), [1, 2])
  r = await f({ group: { category: 'key', price: ['sum', 'max'], sku: 'count' }, filter: { category: { $ne: null } } })
  assert.deepEqual(r.rows, [
    { categoryKey: 'kitchen', priceSum: 65, priceMax: 35, skuCount: 2 },
    { categoryKey: 'office', priceSum: 140, priceMax: 120, skuCount: 2 },
  ])
})

await scenario('updateTableRows, upsertTableRows', async () => {
  const { rows } = await bot.updateTableRows({ table: 'ProductsTable', rows: [{ id: 5, price: 6, category: 'misc' }] })
  assert.equal(rows[0].price, 6)
  assert.equal(rows[0].sku, 'C-1')
  const up = await bot.upsertTableRows({ table: 'ProductsTable', rows: [{ sku: 'A-1', price: 31 }, { sku: 'D-1', title: 'Rug', price: 80, inStock: true }] })
  assert.deepEqual(ids(up.updated), [1])
  assert.equal(up.updated[0].price, 31)
  assert.deepEqual(ids(up.inserted), [6])
  const byTitle = await bot.upsertTableRows({ table: 'ProductsTable', keyColumn: 'title', rows: [{ title: 'Rug', sku: 'D-1', price: 75 }] })
  assert.deepEqual(ids(byTitle.updated), [6])
})

await scenario('renameTableColumn, duplicateTable', async () => {
  const { table } = await bot.renameTableColumn({ table: 'ProductsTable', name: 'category', newName: 'aisle' })
  assert.ok(table.schema.properties.aisle)
  assert.equal(table.schema.properties.category, undefined)
  assert.equal((await bot.getTableRow({ table: 'ProductsTable', id: 3 })).row.aisle, 'office')
  const dup = await bot.duplicateTable({ sourceTableId: 'ProductsTable', tableName: 'ProductsCopyTable' })
  assert.equal(dup.table.name, 'ProductsCopyTable')
  assert.equal(dup.rows, 6)
  const empty = await bot.duplicateTable({ sourceTableId: 'ProductsTable', tableName: 'ProductsEmptyTable', schemaOnly: true })
  assert.equal(empty.rows, 0)
})

await scenario('exportTable (CSV, JSON), importTable, getTableJobs', async () => {
  for (const format of ['csv', 'json']) {
    const { job } = await bot.exportTable({ table: 'ProductsTable', format })
    assert.equal(job.type, 'export')
    assert.equal(job.status, 'completed')
    assert.ok(job.outputFileId)
    const res = await fetch(`${apiUrl}/v1/tables/ProductsTable/jobs/${job.id}/output`, { headers: { authorization: `Bearer ${env('BOT_KEY')}`, 'x-bot-id': botId } })
    const text = await res.text()
    if (format === 'csv') assert.match(text.split('\n')[0], /^id,sku,title,price,inStock,aisle/)
    else assert.equal(JSON.parse(text).length, 6)
    const target = `Import${format}Table`
    await bot.duplicateTable({ sourceTableId: 'ProductsTable', tableName: target, schemaOnly: true })
    const imp = await bot.importTable({ table: target, fileId: job.outputFileId })
    assert.equal(imp.job.status, 'completed')
    assert.equal((await bot.getTable({ table: target })).rows, 6)
    const { jobs } = await bot.getTableJobs({ table: target })
    assert.deepEqual(jobs.map((j) => j.type), ['import'])
  }
})

await scenario('importTable from a file uploaded with the Files API', async () => {
  const target = 'UploadedTable'
  await bot.duplicateTable({ sourceTableId: 'ProductsTable', tableName: target, schemaOnly: true })
  const csv = 'sku,title,price,inStock\nU-1,"Kettle, steel",12.5,true\nU-2,Mug,4,false\n'
  const { file } = await bot.uploadFile({ key: 'imports/products.csv', content: csv, contentType: 'text/csv' })
  const imp = await owner.importTable({ table: target, fileId: file.id })
  assert.equal(imp.job.status, 'completed', imp.job.error)
  assert.equal(imp.job.inputFileId, file.id)
  const { rows } = await bot.findTableRows({ table: target, orderBy: 'sku' })
  assert.deepEqual(rows.map((r) => [r.sku, r.title, r.price, r.inStock]), [['U-1', 'Kettle, steel', 12.5, true], ['U-2', 'Mug', 4, false]])
  // A bad cell fails the job, which says why, and writes no row.
  const bad = await bot.uploadFile({ key: 'imports/bad.csv', content: 'sku,price\nU-3,1\nU-4,cheap\n', contentType: 'text/csv' })
  const failed = await bot.importTable({ table: target, fileId: bad.file.id })
  assert.equal(failed.job.status, 'failed')
  assert.match(failed.job.error, /line 3, column "price": "cheap" is not a number/)
  assert.equal((await bot.getTable({ table: target })).rows, 2)
  // A file not uploaded yet, and another bot's file, are not found.
  const { file: pending } = await bot.upsertFile({ key: 'imports/pending.csv', size: 10 })
  await rejects(bot.importTable({ table: target, fileId: pending.id }), bp.ResourceNotFoundError, 'file not uploaded')
  const theirs = await otherBot.uploadFile({ key: 'imports/theirs.csv', content: 'sku\nT-1\n' })
  await rejects(bot.importTable({ table: target, fileId: theirs.file.id }), bp.ResourceNotFoundError, "another bot's file")
  await bot.deleteTable({ table: target })
})

// snapshot is what a refused call could have changed.
const snapshot = async () => {
  const { tables } = await bot.listTables({})
  const out = []
  for (const t of tables) {
    const { rows } = await bot.findTableRows({ table: t.id, limit: 1000 })
    out.push(JSON.stringify({ t, rows }))
  }
  return out
}

await scenario('refusals write nothing', async () => {
  const before = await snapshot()
  const T = 'ProductsTable'
  await rejects(bot.createTableRows({ table: T, rows: [{ sku: 'ok' }, { sku: 7 }] }), bp.InvalidPayloadError, 'invalid row')
  const e = await rejects(bot.createTableRows({ table: T, rows: [{ sku: 'x', colour: 'red' }] }), bp.InvalidPayloadError, 'unknown column')
  assert.match(e.message, /colour/)
  await rejects(bot.createTableRows({ table: T, rows: [{ title: 'no sku' }] }), bp.InvalidPayloadError, 'missing required')
  await rejects(bot.updateTableRows({ table: T, rows: [{ id: 1, price: 'cheap' }] }), bp.InvalidPayloadError, 'invalid update')
  await rejects(bot.upsertTableRows({ table: T, rows: [{ sku: 'A-1', price: 'x' }] }), bp.InvalidPayloadError, 'invalid upsert')
  const f = await rejects(bot.findTableRows({ table: T, filter: { price: { $between: [1, 2] } } }), bp.InvalidPayloadError, 'unknown operator')
  assert.match(f.message, /\$between/)
  const c = await rejects(bot.findTableRows({ table: T, filter: { colour: 'red' } }), bp.InvalidPayloadError, 'unknown column in filter')
  assert.match(c.message, /colour/)
  await rejects(bot.deleteTableRows({ table: T, filter: { $or: 'x' } }), bp.InvalidPayloadError, 'malformed filter delete')
  await rejects(bot.deleteTableRows({ table: T, filter: { price: { $gt: 'x' } } }), bp.InvalidPayloadError, 'wrong-typed filter delete')
  await rejects(otherBot.getTable({ table: T }), bp.ResourceNotFoundError, "another bot's table")
  await rejects(otherBot.createTableRows({ table: T, rows: [{ sku: 'z' }] }), bp.ResourceNotFoundError, "another bot's table rows")
  await rejects(otherBot.deleteTable({ table: T }), bp.ResourceNotFoundError, "another bot deletes")
  await rejects(otherKey.deleteTable({ table: T }), bp.ForbiddenError, "another bot's key")
  await rejects(anon.listTables({}), bp.UnauthorizedError, 'no credential')
  await rejects(viewer.createTableRows({ table: T, rows: [{ sku: 'v' }] }), bp.ForbiddenError, 'viewer writes')
  const big = 'x'.repeat(41 * 1024 * 1024)
  await rejects(bot.createTableRows({ table: T, rows: [{ sku: big }] }), bp.PayloadTooLargeError, 'oversized body')
  await rejects(bot.createTableRows({ table: T, rows: Array.from({ length: 1001 }, (_, i) => ({ sku: `n-${i}` })) }), bp.LimitExceededError, 'rows per request')
  const wide = { type: 'object', properties: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`c${i}`, { type: 'string' }])) }
  await rejects(bot.createTable({ name: 'WideTable', schema: wide }), bp.LimitExceededError, 'columns per table')
  await rejects(bot.getTableRow({ table: T, id: 999 }), bp.ResourceNotFoundError, 'unknown row')
  await rejects(bot.createTable({ name: 'ProductsTable', schema }), bp.AlreadyExistsError, 'duplicate name')
  await rejects(bot.createTable({ name: 'BadTable', schema: { type: 'object', properties: { a: { type: 'date' } } } }), bp.InvalidPayloadError, 'bad column type')
  assert.deepEqual(await snapshot(), before)
})

await scenario('deleteTableRows (ids, filter, all), deleteTable', async () => {
  const T = 'ProductsCopyTable'
  assert.equal((await bot.deleteTableRows({ table: T, ids: [1, 2] })).deletedRows, 2)
  assert.equal((await bot.deleteTableRows({ table: T, filter: { price: { $gte: 100 } } })).deletedRows, 1)
  assert.equal((await owner.deleteTableRows({ table: T, deleteAllRows: true })).deletedRows, 3)
  assert.equal((await bot.getTable({ table: T })).rows, 0)
  await bot.deleteTable({ table: T })
  await rejects(bot.getTable({ table: T }), bp.ResourceNotFoundError, 'deleted table')
})

finish()
