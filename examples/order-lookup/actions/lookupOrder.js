const orders = {
  'A-1001': { status: 'shipped', carrier: 'DHL', eta: '2025-03-04' },
  'A-1002': { status: 'processing' },
  'B-2001': { status: 'delivered', carrier: 'UPS' },
}
bot.lookups = (bot.lookups || 0) + 1
const order = orders[input.id]
logger.info('lookup', input.id, order ? order.status : 'not found')
return order ? Object.assign({ id: input.id }, order) : null
