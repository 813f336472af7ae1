// kafkajs against floe's secured listeners (security_test.go). One case per
// run, described by the JSON object in argv[2]:
//   brokers      ["host:port"]
//   sasl         {mechanism, username, password} or {mechanism: "oauthbearer", token}; absent: none
//   ssl          {ca, cert, key} file paths (cert and key optional); absent: plaintext
//   localAddress the address to connect from (floe counts failed logins per address)
//   topic, tag, n  produce n records to partition 0 of topic, then read them back in a group
//   everyMs      instead: produce the n records one at a time, everyMs apart, with one
//                producer (its connection outlives short SASL sessions), and read nothing
// It prints "produced N", then "consumed OFFSET KEY=VALUE h=HEADER" for each
// record read, and exits 0; or, when connecting fails, one line
// "refused ERRORNAME: MESSAGE" and exits 0 too: the test judges the error.
// Anything else unexpected exits 1.
const fs = require('fs')
const net = require('net')
const tls = require('tls')
const { Kafka, logLevel } = require('kafkajs')

const c = JSON.parse(process.argv[2])

function fail (msg) { console.error(msg); process.exit(1) }

// socketFactory is kafkajs's own factory plus localAddress; no TLS
// ServerName for an IP address (RFC 6066), so Node checks the IP SAN.
function socketFactory ({ host, port, ssl, onConnect }) {
  const opts = { host, port, localAddress: c.localAddress }
  if (ssl) {
    return tls.connect(Object.assign(opts, ssl, net.isIP(host) ? {} : { servername: host }), onConnect)
  }
  return net.connect(opts, onConnect)
}

function config () {
  const cfg = {
    clientId: 'floe-security-' + c.tag,
    brokers: c.brokers,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 3000,
    requestTimeout: 10000,
    retry: { retries: 0 },
    socketFactory
  }
  if (c.ssl) {
    cfg.ssl = { ca: [fs.readFileSync(c.ssl.ca)] }
    if (c.ssl.cert) {
      cfg.ssl.cert = fs.readFileSync(c.ssl.cert)
      cfg.ssl.key = fs.readFileSync(c.ssl.key)
    }
  }
  if (c.sasl) {
    const { mechanism, username, password, token } = c.sasl
    cfg.sasl = mechanism === 'oauthbearer'
      ? { mechanism, oauthBearerProvider: async () => ({ value: token }) }
      : { mechanism, username, password }
  }
  return cfg
}

async function main () {
  const kafka = new Kafka(config())
  const producer = kafka.producer()
  try {
    await producer.connect()
    // kafkajs connects lazily: the first request is what authenticates.
    const messages = []
    for (let i = 0; i < c.n; i++) {
      messages.push({ key: `${c.tag}-k${i}`, value: `${c.tag}-v${i}`, partition: 0, headers: { h: `${c.tag}-h${i}` } })
    }
    if (c.everyMs) {
      for (const m of messages) {
        await producer.send({ topic: c.topic, acks: -1, messages: [m] })
        await new Promise(resolve => setTimeout(resolve, c.everyMs))
      }
    } else {
      await producer.send({ topic: c.topic, acks: -1, messages })
    }
  } catch (e) {
    console.log(`refused ${e.name}: ${e.message}`)
    await producer.disconnect().catch(() => {})
    return
  }
  await producer.disconnect()
  console.log(`produced ${c.n}`)
  if (c.everyMs) return

  const consumer = kafka.consumer({ groupId: 'floe-security-' + c.tag, maxWaitTimeInMs: 200 })
  await consumer.connect()
  await consumer.subscribe({ topic: c.topic, fromBeginning: true })
  const got = []
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`read ${got.length} of ${c.n} records in 20 s`)), 20000)
    consumer.run({
      eachMessage: async ({ message: m }) => {
        got.push(`consumed ${m.offset} ${m.key}=${m.value} h=${m.headers.h}`)
        if (got.length === c.n) { clearTimeout(timer); resolve() }
      }
    }).catch(reject)
  })
  await consumer.disconnect()
  for (const l of got) console.log(l)
}

main().catch(e => fail(e.stack || String(e)))
