const o = workflow.order
if (!o) {
  workflow.summary = `I found no order ${workflow.orderId}. Let's try again.`
  workflow.found = false
  return
}
workflow.found = true
switch (o.status) {
  case 'shipped':
    workflow.summary = `Order ${o.id} has shipped with ${o.carrier} and should arrive on ${o.eta}.`
    break
  case 'delivered':
    workflow.summary = `Order ${o.id} was delivered by ${o.carrier}.`
    break
  default:
    workflow.summary = `Order ${o.id} is ${o.status}.`
}
