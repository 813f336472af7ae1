// kafkajs half of floe's client compatibility matrix, driven by
// integration/compat_cli_test.go. Each case prints one line per record it
// consumed (or committed), sorted, so the Go test can compare the whole
// output with what it expects:
//
//   node matrix.js CASE --produce=HOST:PORT,... --produce-id=CLIENTID
//                       --consume=HOST:PORT,... --consume-id=CLIENTID [--topic=T] [...]
//
// Cases:
//   codecs    --topic=PREFIX --n=N: produce N records to PREFIX-none, -gzip,
//             -snappy, -lz4, -zstd with that codec each, then read all five
//             topics back with one consumer.
//   group     --topic=T --group=G --count=N: one group member consumes N
//             records with autoCommit off, committing each one with
//             commitOffsets, then leaves.
//   idempotent --topic=T --n=N: idempotent producer (maxInFlightRequests 1)
//             sends N records in three sends, then reads them back.
//   txn       --topic=T --txn-id=ID: transactional producer commits 10 records, aborts
//             10, commits 5; a readUncommitted:false consumer then a
//             readUncommitted:true consumer read the topic.
//
// Client ids carry floe_az=ZONE so the agents target can route produce and
// consume through different agents.
const { Kafka, CompressionTypes, CompressionCodecs, logLevel } = require('kafkajs')
const codecs = require('./matrix-codecs')

const args = { _: [] }
for (const a of process.argv.slice(2)) {
  const m = /^--([^=]+)=(.*)$/.exec(a)
  if (m) args[m[1]] = m[2]
  else args._.push(a)
}

function fail (msg) { console.error(msg); process.exit(1) }

const level = process.env.FLOE_KAFKAJS_DEBUG === '1' ? logLevel.DEBUG : logLevel.ERROR

function client (brokers, clientId) {
  return new Kafka({ clientId, brokers: brokers.split(','), logLevel: level, retry: { retries: 8 } })
}

const producerKafka = () => client(args.produce, args['produce-id'])
const consumerKafka = () => client(args.consume, args['consume-id'])

// Timestamps are explicit so the test can check they come back unchanged.
const baseTs = 1700000000000

// line is how every consumed record is printed.
function line (topic, partition, m) {
  const h = m.headers && m.headers.h !== undefined ? m.headers.h.toString() : '-'
  const key = m.key === null ? '<nil>' : m.key.toString()
  const value = m.value === null ? '<nil>' : m.value.toString()
  return `${topic} ${partition} ${m.offset} ${key}=${value} h=${h} ts=${m.timestamp}`
}

// byTopicPartitionOffset orders printed records by topic, partition, then offset.
function byTopicPartitionOffset (a, b) {
  if (a.topic !== b.topic) return a.topic < b.topic ? -1 : 1
  if (a.partition !== b.partition) return a.partition - b.partition
  const d = BigInt(a.offset) - BigInt(b.offset)
  return d < 0n ? -1 : d > 0n ? 1 : 0
}

// readAll reads topics from the start with a fresh group until want records
// arrived, then one more second to catch anything extra (duplicates or
// records that must not be there), and returns the printed lines sorted.
async function readAll (topics, want, { readUncommitted = false } = {}) {
  const kafka = consumerKafka()
  const consumer = kafka.consumer({
    groupId: `matrix-read-${process.pid}-${Date.now()}`,
    maxWaitTimeInMs: 100,
    sessionTimeout: 10000,
    heartbeatInterval: 500,
    readUncommitted
  })
  await consumer.connect()
  for (const topic of topics) await consumer.subscribe({ topic, fromBeginning: true })
  const got = []
  let reached
  const enough = new Promise(resolve => { reached = resolve })
  await consumer.run({
    eachMessage: async ({ topic, partition, message }) => {
      got.push({ topic, partition, offset: message.offset, text: line(topic, partition, message) })
      if (got.length >= want) reached()
    }
  })
  const timer = setTimeout(() => fail(`timeout: read ${got.length} of ${want} records of ${topics}`), 60000)
  await enough
  clearTimeout(timer)
  await new Promise(resolve => setTimeout(resolve, 1000))
  await consumer.disconnect()
  return got.sort(byTopicPartitionOffset).map(r => r.text)
}

function message (prefix, i) {
  return { key: `${prefix}-k${i}`, value: `${prefix}-v${i}-${'abcdefgh'.repeat(8)}`, headers: { h: `${prefix}-h${i}` }, timestamp: String(baseTs + i) }
}

async function caseCodecs () {
  await codecs.register(CompressionTypes, CompressionCodecs)
  const n = Number(args.n)
  const kinds = [['none', CompressionTypes.None], ['gzip', CompressionTypes.GZIP],
    ['snappy', CompressionTypes.Snappy], ['lz4', CompressionTypes.LZ4], ['zstd', CompressionTypes.ZSTD]]
  const producer = producerKafka().producer()
  await producer.connect()
  const topics = []
  for (const [name, compression] of kinds) {
    const topic = `${args.topic}-${name}`
    topics.push(topic)
    const messages = []
    for (let i = 0; i < n; i++) messages.push({ ...message(name, i), partition: 0 })
    const res = await producer.send({ topic, compression, acks: -1, messages })
    console.log(`sent ${topic} ${res.map(r => `${r.partition}@${r.baseOffset}`).join(',')}`)
  }
  await producer.disconnect()
  for (const l of await readAll(topics, n * kinds.length)) console.log(l)
}

async function caseGroup () {
  const count = Number(args.count)
  const consumer = consumerKafka().consumer({ groupId: args.group, maxWaitTimeInMs: 100, sessionTimeout: 10000, heartbeatInterval: 500 })
  await consumer.connect()
  await consumer.subscribe({ topic: args.topic, fromBeginning: true })
  const got = []
  let reached
  const enough = new Promise(resolve => { reached = resolve })
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ topic, partition, message }) => {
      // Past count, records are neither printed nor committed: the next
      // member of the group must get them.
      if (got.length >= count) return
      got.push({ topic, partition, offset: message.offset, text: line(topic, partition, message) })
      await consumer.commitOffsets([{ topic, partition, offset: String(BigInt(message.offset) + 1n) }])
      if (got.length === count) reached()
    }
  })
  const timer = setTimeout(() => fail(`timeout: consumed ${got.length} of ${count}`), 60000)
  await enough
  clearTimeout(timer)
  await consumer.disconnect()
  for (const r of got.sort(byTopicPartitionOffset)) console.log(r.text)
}

async function caseIdempotent () {
  const n = Number(args.n)
  const producer = producerKafka().producer({ idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  const third = Math.floor(n / 3)
  for (const [from, to] of [[0, third], [third, 2 * third], [2 * third, n]]) {
    const messages = []
    for (let i = from; i < to; i++) messages.push({ ...message('idem', i), partition: 0 })
    const res = await producer.send({ topic: args.topic, acks: -1, messages })
    console.log(`sent ${args.topic} ${res.map(r => `${r.partition}@${r.baseOffset}`).join(',')}`)
  }
  await producer.disconnect()
  for (const l of await readAll([args.topic], n)) console.log(l)
}

async function caseTxn () {
  const producer = producerKafka().producer({ transactionalId: args['txn-id'], idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  for (const [prefix, n, commit] of [['commit1', 10, true], ['abort', 10, false], ['commit2', 5, true]]) {
    const txn = await producer.transaction()
    const messages = []
    for (let i = 0; i < n; i++) messages.push({ ...message(prefix, i), partition: 0 })
    await txn.send({ topic: args.topic, acks: -1, messages })
    if (commit) await txn.commit()
    else await txn.abort()
    console.log(`${commit ? 'committed' : 'aborted'} ${prefix}`)
  }
  await producer.disconnect()
  for (const l of await readAll([args.topic], 15)) console.log(`committed-read ${l}`)
  for (const l of await readAll([args.topic], 25, { readUncommitted: true })) console.log(`uncommitted-read ${l}`)
}

const cases = { codecs: caseCodecs, group: caseGroup, idempotent: caseIdempotent, txn: caseTxn }
if (!cases[args._[0]]) fail(`unknown case ${args._[0]}; want one of ${Object.keys(cases)}`)
cases[args._[0]]().then(() => process.exit(0), e => fail(e.stack || String(e)))
