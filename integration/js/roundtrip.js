// kafkajs round trip against one floe agent: list brokers and topics, create
// and delete a topic, produce with every codec kafkajs ships (none, gzip),
// consume by partition, list offsets. Prints "ok" and exits 0 on success.
const { Kafka, CompressionTypes, logLevel } = require('kafkajs')

const broker = process.argv[2]
const kafka = new Kafka({ clientId: 'floe-kafkajs-test', brokers: [broker], logLevel: logLevel.ERROR, retry: { retries: 5 } })

function fail (msg) { console.error(msg); process.exit(1) }

async function main () {
  const admin = kafka.admin()
  await admin.connect()
  const topic = 'kafkajs'
  if (!(await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true }))) fail('createTopics returned false')
  const cluster = await admin.describeCluster()
  if (cluster.brokers.length !== 1 || `${cluster.brokers[0].host}:${cluster.brokers[0].port}` !== broker) fail('describeCluster: ' + JSON.stringify(cluster.brokers))
  if (!(await admin.listTopics()).includes(topic)) fail('listTopics misses ' + topic)

  const producer = kafka.producer()
  await producer.connect()
  const sent = []
  for (const [ci, compression] of [CompressionTypes.None, CompressionTypes.GZIP].entries()) {
    const messages = []
    for (let i = 0; i < 50; i++) {
      const m = { key: `k${ci}-${i}`, value: `v${ci}-${i}`, partition: i % 2, headers: { h: `x${i}` } }
      messages.push(m)
      sent.push(m)
    }
    await producer.send({ topic, compression, acks: -1, messages })
  }
  await producer.disconnect()

  const offsets = await admin.fetchTopicOffsets(topic)
  for (const o of offsets) {
    if (o.low !== '0' || o.high !== '50') fail('fetchTopicOffsets: ' + JSON.stringify(offsets))
  }

  // Consumer groups come with their own issue: read by partition with
  // kafkajs's own connections and Fetch encoder instead.
  const got = { 0: [], 1: [] }
  const fetched = await fetchAll(topic)
  for (const m of fetched) got[m.partition].push(m)
  for (const p of [0, 1]) {
    const want = sent.filter(m => m.partition === p)
    if (got[p].length !== want.length) fail(`partition ${p}: got ${got[p].length} want ${want.length}`)
    got[p].forEach((m, i) => {
      if (m.offset !== String(i) || m.key !== want[i].key || m.value !== want[i].value || m.h !== want[i].headers.h) {
        fail(`partition ${p} record ${i}: ${JSON.stringify(m)} want ${JSON.stringify(want[i])}`)
      }
    })
  }

  await admin.deleteTopics({ topics: [topic] })
  if ((await admin.listTopics()).includes(topic)) fail('topic still listed after delete')
  await admin.disconnect()
  console.log('ok')
}

// fetchAll reads both partitions from offset 0 with kafkajs's own broker
// connection and protocol encoders.
async function fetchAll (topic) {
  const Cluster = require('kafkajs/src/cluster')
  const cluster = new Cluster({
    logger: kafka.logger(),
    socketFactory: require('kafkajs/src/network/socketFactory')(),
    brokers: [broker],
    connectionTimeout: 5000,
    retry: { retries: 3 }
  })
  await cluster.connect()
  await cluster.addTargetTopic(topic)
  const out = []
  const next = { 0: '0', 1: '0' }
  for (let round = 0; round < 20 && (next[0] !== '50' || next[1] !== '50'); round++) {
    const b = await cluster.findLeaderForPartitions(topic, [0, 1])
    for (const [nodeId, partitions] of Object.entries(b)) {
      const br = await cluster.findBroker({ nodeId })
      const resp = await br.fetch({
        maxWaitTime: 100,
        minBytes: 1,
        maxBytes: 1 << 20,
        topics: [{ topic, partitions: partitions.map(p => ({ partition: p, fetchOffset: next[p], maxBytes: 1 << 20 })) }]
      })
      for (const t of resp.responses) {
        for (const pd of t.partitions) {
          if (pd.errorCode !== 0) fail('fetch error ' + pd.errorCode)
          for (const m of pd.messages) {
            if (BigInt(m.offset) < BigInt(next[pd.partition])) continue
            out.push({ partition: pd.partition, offset: m.offset, key: m.key.toString(), value: m.value.toString(), h: m.headers.h.toString() })
            next[pd.partition] = String(BigInt(m.offset) + 1n)
          }
        }
      }
    }
  }
  await cluster.disconnect()
  return out
}

main().catch(e => fail(e.stack || String(e)))
