// kafkajs consumer group against floe: two consumers of one group read
// every record of a topic and commit; prints "ok" on success.
// Usage: node group.js BROKER TOPIC GROUP COUNT
const { Kafka, logLevel } = require('kafkajs')

async function main() {
  const [broker, topic, groupId, countArg] = process.argv.slice(2)
  const count = Number(countArg)
  const kafka = new Kafka({ clientId: 'floe-js-group', brokers: [broker], logLevel: logLevel.NOTHING })
  const seen = new Set()
  let finish
  const done = new Promise((resolve) => { finish = resolve })
  const consumers = []
  for (let i = 0; i < 2; i++) {
    const c = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 500, maxWaitTimeInMs: 200 })
    await c.connect()
    await c.subscribe({ topic, fromBeginning: true })
    await c.run({
      autoCommitInterval: 100,
      eachMessage: async ({ message }) => {
        seen.add(message.value.toString())
        if (seen.size >= count) finish()
      },
    })
    consumers.push(c)
  }
  const timer = setTimeout(() => { throw new Error(`timeout: saw ${seen.size} of ${count}`) }, 90000)
  await done
  clearTimeout(timer)
  // disconnect commits what was consumed and leaves the group.
  for (const c of consumers) await c.disconnect()
  for (let i = 0; i < count; i++) {
    if (!seen.has(`${topic}/${i}`)) throw new Error(`record ${topic}/${i} never consumed`)
  }
  console.log('ok')
}

main().catch((e) => { console.error(e); process.exit(1) })
