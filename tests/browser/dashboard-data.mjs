// The dashboard's Knowledge and Tables tabs on one bot: a knowledge base,
// a text file uploaded to it, indexed, its passages, a search that finds
// the answering passage, a file whose indexing fails with its reason; a
// table created with typed columns, rows added and edited, a filter, a
// CSV export (downloaded and read) and imports (one accepted, one refused
// with the job's reason), a row deleted.
// Env: BASE_URL, TOKEN, WS, BOT.
import { readFile } from 'node:fs/promises'
import { BASE, run, shot, step, watch } from './lib.mjs'

const TOKEN = process.env.TOKEN
const T = 15000
const botURL = (tab) => `${BASE}/#/ws/${process.env.WS}/bots/${process.env.BOT}/${tab}`
const expect = (cond, msg) => {
  if (!cond) throw new Error(msg)
}

const refunds = `Returns and refunds

You can return any item within 30 days of delivery, in its original packaging.

Refunds are paid back to your card within 14 days once the parcel reaches our warehouse.

Shipping is free for orders above 50 euros.`

await run('dashboard data', async (browser) => {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true })
  const page = await ctx.newPage()
  const w = watch(page, 'dashboard data')

  step('sign in')
  await page.goto(`${BASE}/`)
  await page.getByLabel('Access token').fill(TOKEN)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('heading', { name: 'Bots' }).waitFor({ timeout: T })

  step('Knowledge: create a knowledge base')
  await page.goto(botURL('knowledge'))
  await page.getByRole('heading', { name: 'Knowledge bases' }).waitFor({ timeout: T })
  await page.getByText('No knowledge bases yet').waitFor({ timeout: T })
  await page.getByLabel('Name', { exact: true }).fill('Store FAQ')
  await page.getByRole('button', { name: 'Create knowledge base' }).click()
  await page.getByText('kb=store-faq · 0 files').waitFor({ timeout: T })

  step('upload a text file to it; it is indexed')
  await page.getByLabel('File to upload').setInputFiles({ name: 'refunds.txt', mimeType: 'text/plain', buffer: Buffer.from(refunds) })
  await page.getByLabel('Knowledge base', { exact: true }).selectOption({ label: 'Store FAQ' })
  await page.getByRole('button', { name: 'Upload', exact: true }).click()
  await page.getByText('Uploaded refunds.txt.').waitFor({ timeout: T })
  await page.getByLabel('Status: indexed').waitFor({ timeout: T })
  await page.getByText('kb=store-faq · 1 file').waitFor({ timeout: T })

  step('its passages')
  await page.getByRole('button', { name: 'Passages of refunds.txt' }).click()
  const passages = page.getByRole('list', { name: 'Passages of refunds.txt' })
  await passages.getByText('Refunds are paid back to your card within 14 days').waitFor({ timeout: T })
  const n = await passages.getByRole('listitem').count()
  expect(n === 4, `expected 4 passages, got ${n}`)

  step('a file that cannot be indexed shows why')
  await page.getByLabel('Knowledge base', { exact: true }).selectOption({ label: 'none (only the tags below)' })
  await page.getByLabel('File to upload').setInputFiles({ name: 'photo.bin', mimeType: 'application/octet-stream', buffer: Buffer.from([1, 2, 3, 4]) })
  await page.getByRole('button', { name: 'Upload', exact: true }).click()
  await page.getByLabel('Status: indexing failed').waitFor({ timeout: T })
  const reason = await page.locator('.file-list li', { hasText: 'photo.bin' }).locator('.field-error').innerText()
  expect(/cannot be indexed/.test(reason), `failure reason: ${reason}`)

  step('search the knowledge base with other words than the passage')
  await page.getByLabel('Question').fill('when will my refund be paid?')
  await page.getByLabel('Search in').selectOption({ label: 'Store FAQ' })
  await page.getByRole('button', { name: 'Search', exact: true }).click()
  const hits = page.getByRole('list', { name: 'Search results' })
  await hits.waitFor({ timeout: T })
  const best = await hits.getByRole('listitem').first().innerText()
  expect(best.includes('within 14 days') && best.includes('refunds.txt') && /score \d/.test(best), `best hit: ${best}`)
  await page.getByLabel('Question').fill('zebra giraffe')
  await page.getByRole('button', { name: 'Search', exact: true }).click()
  await page.getByText('No passage matches “zebra giraffe”.').waitFor({ timeout: T })
  await page.getByLabel('Question').fill('when will my refund be paid?')
  await page.getByRole('button', { name: 'Search', exact: true }).click()
  await hits.waitFor({ timeout: T })
  await page.setViewportSize({ width: 1280, height: 1400 })
  await page.evaluate(() => window.scrollTo(0, 0))
  await shot(page, 'dashboard-knowledge.png')
  await page.setViewportSize({ width: 1280, height: 900 })

  step('Tables: create a table with typed columns')
  await page.getByRole('navigation', { name: 'Bot sections' }).getByRole('link', { name: 'Tables' }).click()
  await page.getByText('No tables yet').waitFor({ timeout: T })
  await page.getByLabel('Table name').fill('OrdersTable')
  await page.getByLabel('Column 1 name').fill('ref')
  await page.getByRole('checkbox', { name: 'required' }).check()
  await page.getByRole('button', { name: 'Add column' }).click()
  await page.getByLabel('Column 2 name').fill('total')
  await page.getByLabel('Column 2 type').selectOption({ label: 'Number' })
  await page.getByRole('button', { name: 'Add column' }).click()
  await page.getByLabel('Column 3 name').fill('paid')
  await page.getByLabel('Column 3 type').selectOption({ label: 'Yes/no' })
  await page.getByLabel('Key column (optional)').selectOption('ref')
  await shot(page, 'dashboard-tables-new.png')
  await page.getByRole('button', { name: 'Create table' }).click()
  await page.getByRole('heading', { name: 'OrdersTable' }).waitFor({ timeout: T })
  await page.getByText('No rows yet').waitFor({ timeout: T })

  step('add rows; a wrong value is refused before it is sent')
  const addRow = async (ref, total, paid) => {
    await page.getByRole('textbox', { name: 'ref', exact: true }).fill(ref)
    await page.getByRole('textbox', { name: 'total', exact: true }).fill(total)
    await page.getByRole('combobox', { name: 'paid', exact: true }).selectOption(paid)
    await page.getByRole('button', { name: 'Add row' }).click()
  }
  await addRow('A1', '30', 'yes')
  await page.getByText('Row 1 added.').waitFor({ timeout: T })
  await addRow('B2', '12.5', 'no')
  await page.getByText('Row 2 added.').waitFor({ timeout: T })
  await addRow('C3', 'lots', 'no')
  await page.getByText('total: “lots” is not a number').waitFor({ timeout: T })
  await page.getByRole('textbox', { name: 'total', exact: true }).fill('')
  await page.getByText('2 rows', { exact: true }).waitFor({ timeout: T })

  step('edit a row')
  await page.getByRole('button', { name: 'Edit row 1' }).click()
  await page.getByLabel('total of row 1').fill('45')
  await page.getByRole('button', { name: 'Save' }).click()
  await page.getByRole('button', { name: 'Edit row 1' }).waitFor({ timeout: T })
  const row1 = await page.getByRole('row').filter({ hasText: 'A1' }).innerText()
  expect(/\b45\b/.test(row1) && row1.includes('yes'), `row 1 after edit: ${row1}`)

  step('filter: total ≥ 20')
  await page.getByRole('button', { name: 'Add condition' }).click()
  await page.getByLabel('Condition 1 column').selectOption('total')
  await page.getByLabel('Condition 1 operator').selectOption({ label: '≥' })
  await page.getByLabel('Condition 1 value').fill('20')
  await page.getByRole('button', { name: 'Apply filter' }).click()
  await page.getByText('{"total":{"$gte":20}}').waitFor({ timeout: T })
  await page.getByRole('row').filter({ hasText: 'B2' }).waitFor({ state: 'detached', timeout: T })
  expect((await page.locator('table.rows tbody tr').count()) === 1, 'one row matches total ≥ 20')
  await shot(page, 'dashboard-tables.png')

  step('export CSV')
  const [download] = await Promise.all([page.waitForEvent('download', { timeout: T }), page.getByRole('button', { name: 'Export CSV' }).click()])
  expect(download.suggestedFilename() === 'OrdersTable.csv', `download name ${download.suggestedFilename()}`)
  const csv = (await readFile(await download.path(), 'utf8')).trim().split('\n')
  expect(csv[0] === 'id,ref,total,paid', `CSV header: ${csv[0]}`)
  expect(csv.includes('1,A1,45,true') && csv.includes('2,B2,12.5,false') && csv.length === 3, `CSV: ${csv.join(' | ')}`)
  await page.getByText('export completed').first().waitFor({ timeout: T })

  step('import CSV: two rows added')
  const importCsv = async (name, text) => {
    await page.getByLabel('CSV file to import').setInputFiles({ name, mimeType: 'text/csv', buffer: Buffer.from(text) })
    await page.getByRole('button', { name: 'Import CSV' }).click()
  }
  await importCsv('more.csv', 'ref,total,paid\nD4,99,true\nE5,3,false\n')
  await page.getByText('Import completed.').waitFor({ timeout: T })
  await page.getByText('4 rows', { exact: true }).waitFor({ timeout: T })
  await page.getByRole('row').filter({ hasText: 'D4' }).waitFor({ timeout: T }) // matches the filter
  expect((await page.getByRole('row').filter({ hasText: 'E5' }).count()) === 0, 'E5 does not match total ≥ 20')

  step('import CSV with a bad row: the job fails, says why, adds nothing')
  await importCsv('bad.csv', 'ref,total\nF6,1\nG7,cheap\n')
  await page.getByText(/Import failed: .*total/).waitFor({ timeout: T })
  await page.getByText('import failed').first().waitFor({ timeout: T })
  await page.getByText('4 rows', { exact: true }).waitFor({ timeout: T })
  await page.getByRole('heading', { name: 'Jobs' }).scrollIntoViewIfNeeded()
  await shot(page, 'dashboard-tables-csv.png')

  step('clear the filter, delete a row')
  await page.getByRole('button', { name: 'Clear filter' }).click()
  await page.getByRole('row').filter({ hasText: 'E5' }).waitFor({ timeout: T })
  await page.getByLabel('Select row 2').check()
  await page.getByRole('button', { name: 'Delete selected (1)' }).click()
  await page.getByRole('button', { name: 'Yes, delete 1 row' }).click()
  await page.getByText('3 rows', { exact: true }).waitFor({ timeout: T })
  // The count can show before the list is read again: wait for the row
  // to go (it fails the test if it stays).
  await page.getByRole('row').filter({ hasText: 'B2' }).waitFor({ state: 'detached', timeout: T })
  await shot(page, 'dashboard-tables-rows.png')

  step('the import file is not left among the knowledge files')
  await page.getByRole('navigation', { name: 'Bot sections' }).getByRole('link', { name: 'Knowledge' }).click()
  await page.getByText('refunds.txt').waitFor({ timeout: T })
  expect((await page.getByText('table-imports/').count()) === 0, 'import files deleted after import')

  step('a second bot of the same name is warned about')
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Bots', exact: true }).click()
  await page.getByLabel('New bot name').fill('shop BOT ')
  await page.getByText('This workspace already has a bot named “Shop bot”').waitFor({ timeout: T })
  await page.getByLabel('New bot name').fill('Shop bot 2')
  await page.getByText('already has a bot named').waitFor({ state: 'detached', timeout: T })
  w.check()

  step('on a phone, every tab of the bot is on screen and usable')
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true })
  const p2 = await phone.newPage()
  const w2 = watch(p2, 'dashboard data (phone)')
  await p2.goto(`${BASE}/`)
  await p2.getByLabel('Access token').fill(TOKEN)
  await p2.getByRole('button', { name: 'Sign in' }).click()
  await p2.getByRole('heading', { name: 'Bots' }).waitFor({ timeout: T })
  await p2.goto(botURL('overview'))
  const tabs = p2.getByRole('navigation', { name: 'Bot sections' }).getByRole('link')
  await tabs.first().waitFor({ timeout: T })
  const count = await tabs.count()
  expect(count >= 8, `only ${count} tabs`)
  for (let i = 0; i < count; i++) {
    const box = await tabs.nth(i).boundingBox()
    const name = await tabs.nth(i).innerText()
    expect(box && box.x >= 0 && box.x + box.width <= 390 && box.height >= 24, `tab ${name} is off screen or too small: ${JSON.stringify(box)}`)
  }
  const widths = await p2.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth])
  expect(widths[0] <= widths[1], `the page scrolls sideways: ${widths}`)
  await shot(p2, 'dashboard-phone-tabs.png')
  await tabs.filter({ hasText: 'Tables' }).tap()
  await p2.getByRole('link', { name: 'OrdersTable' }).tap()
  await p2.getByRole('heading', { name: 'OrdersTable' }).waitFor({ timeout: T })
  await shot(p2, 'dashboard-phone-table.png')
  w2.check()
})
