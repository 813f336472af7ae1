// @kafkajs/confluent-schema-registry and kafkajs against floe: register,
// evolve (a compatible version accepted, an incompatible one refused),
// encode and decode for Avro, JSON Schema and Protobuf, the id look-ups
// (getRegistryId, getLatestSchemaId, getRegistryIdBySchema), a cold client
// fetching schemas by id, and a produce/consume round trip through a topic
// with confluent.value.schema.validation=full: the package's records land
// and decode, a record framed with an unknown id is refused by the broker.
// Prints "ok" on success. Usage: node registry.js BROKER REGISTRY
const assert = require('node:assert/strict')
const { Kafka, logLevel } = require('kafkajs')
const { SchemaRegistry, SchemaType, COMPATIBILITY } = require('@kafkajs/confluent-schema-registry')

const [broker, registryAddr] = process.argv.slice(2)
const host = `http://${registryAddr}`
const registry = new SchemaRegistry({ host })

// frame is Confluent's wire format without message indexes: magic byte 0,
// the schema id, the payload.
function frame (id, payload) {
  const b = Buffer.alloc(5)
  b.writeInt32BE(id, 1)
  return Buffer.concat([b, payload])
}

// refused runs fn and checks that the registry answered status.
async function refused (fn, status, what) {
  try {
    await fn()
  } catch (e) {
    assert.equal(e.status, status, `${what}: ${e}`)
    return e
  }
  throw new Error(`${what}: accepted`)
}

async function avro () {
  const v1 = { type: 'record', name: 'Order', namespace: 'shop', fields: [{ name: 'id', type: 'long' }, { name: 'amount', type: 'double' }] }
  const v2 = { ...v1, fields: [...v1.fields, { name: 'note', type: ['null', 'string'], default: null }] }
  const bad = { ...v1, fields: [{ name: 'id', type: 'string' }] }
  // No subject given: the package names it namespace.name.
  const subject = 'shop.Order'
  const { id: id1 } = await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(v1) })
  const { id: id2 } = await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(v2) })
  assert.ok(id2 > id1, `avro ids ${id1}, ${id2}`)
  // Registering v1 again answers its id.
  assert.equal((await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(v1) })).id, id1)
  const e = await refused(() => registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(bad) }), 409, 'avro incompatible')
  assert.match(e.message, /incompatible/i)

  assert.equal(await registry.getRegistryId(subject, 1), id1)
  assert.equal(await registry.getRegistryId(subject, 2), id2)
  assert.equal(await registry.getRegistryId(subject, 'latest'), id2)
  assert.equal(await registry.getLatestSchemaId(subject), id2)
  assert.equal(await registry.getRegistryIdBySchema(subject, { type: SchemaType.AVRO, schema: JSON.stringify(v1) }), id1)
  await refused(() => registry.getLatestSchemaId('absent-subject'), 404, 'latest of an absent subject')

  const order = { id: 7, amount: 12.5 }
  const enc = await registry.encode(id1, order)
  assert.equal(enc[0], 0)
  assert.equal(enc.readInt32BE(1), id1)
  assert.deepEqual({ ...(await registry.decode(enc)) }, order)
  // A cold client fetches the writer's schema by id; v2 as reader schema
  // fills the new field's default.
  const cold = new SchemaRegistry({ host })
  assert.deepEqual({ ...(await cold.decode(enc)) }, order)
  const read = await cold.decode(enc, { [SchemaType.AVRO]: { readerSchema: v2 } })
  assert.deepEqual({ ...read }, { ...order, note: null })
  const enc2 = await cold.encode(id2, { id: 8, amount: 1, note: 'gift' })
  assert.deepEqual({ ...(await registry.decode(enc2)) }, { id: 8, amount: 1, note: 'gift' })
  return id1
}

async function json () {
  const subject = 'js-json-value'
  const v1 = {
    $schema: 'http://json-schema.org/draft-07/schema#',
    title: 'Person',
    type: 'object',
    properties: { id: { type: 'integer' }, name: { type: 'string' } },
    required: ['id'],
    additionalProperties: false,
  }
  // An optional property added to a closed content model: BACKWARD compatible.
  const v2 = { ...v1, properties: { ...v1.properties, email: { type: 'string' } } }
  // A required one: not.
  const bad = { ...v1, properties: { ...v1.properties, age: { type: 'integer' } }, required: ['id', 'age'] }
  const { id: id1 } = await registry.register({ type: SchemaType.JSON, schema: JSON.stringify(v1) }, { subject })
  const { id: id2 } = await registry.register({ type: SchemaType.JSON, schema: JSON.stringify(v2) }, { subject })
  assert.ok(id2 > id1, `json ids ${id1}, ${id2}`)
  await refused(() => registry.register({ type: SchemaType.JSON, schema: JSON.stringify(bad) }, { subject }), 409, 'json incompatible')
  assert.equal(await registry.getRegistryId(subject, 1), id1)
  assert.equal(await registry.getLatestSchemaId(subject), id2)
  assert.equal(await registry.getRegistryIdBySchema(subject, { type: SchemaType.JSON, schema: JSON.stringify(v2) }), id2)

  const person = { id: 1, name: 'Ada', email: 'ada@example.com' }
  const enc = await registry.encode(id2, person)
  assert.equal(enc.readInt32BE(1), id2)
  assert.deepEqual(await new SchemaRegistry({ host }).decode(enc), person)
  // The package checks payloads against the schema before it encodes.
  await assert.rejects(registry.encode(id1, { id: 'one' }), /invalid payload/)
  return id2
}

async function protobuf () {
  const subject = 'js-proto-value'
  const v1 = `syntax = "proto3";
package shop;

message Item {
  int64 id = 1;
  string name = 2;
}
`
  // A field added: compatible. A field's type changed: not.
  const v2 = v1.replace('string name = 2;', 'string name = 2;\n  double price = 3;')
  const bad = v1.replace('int64 id = 1;', 'string id = 1;')
  const { id: id1 } = await registry.register({ type: SchemaType.PROTOBUF, schema: v1 }, { subject })
  const { id: id2 } = await registry.register({ type: SchemaType.PROTOBUF, schema: v2 }, { subject })
  assert.ok(id2 > id1, `protobuf ids ${id1}, ${id2}`)
  await refused(() => registry.register({ type: SchemaType.PROTOBUF, schema: bad }, { subject }), 409, 'protobuf incompatible')
  assert.equal(await registry.getRegistryId(subject, 2), id2)
  assert.equal(await registry.getLatestSchemaId(subject), id2)
  assert.equal(await registry.getRegistryIdBySchema(subject, { type: SchemaType.PROTOBUF, schema: v1 }), id1)

  const item = { id: 5, name: 'pen', price: 1.5 }
  const enc = await registry.encode(id2, item)
  assert.equal(enc.readInt32BE(1), id2)
  const dec = await new SchemaRegistry({ host }).decode(enc)
  assert.deepEqual({ id: Number(dec.id), name: dec.name, price: dec.price }, item)
  // The package writes no message indexes (Confluent's serializers write
  // [0] as one 0 byte for the first message); its decoder skips leading
  // zero bytes, so it reads Confluent's framing too.
  assert.equal(enc[5], 0x08, 'protobuf payload starts with field 1, varint: no message index')
  const confluent = Buffer.concat([enc.subarray(0, 5), Buffer.from([0]), enc.subarray(5)])
  const dec2 = await registry.decode(confluent)
  assert.equal(dec2.name, 'pen')
  return { id: id2, enc, confluent }
}

// compatibility: a subject's first registration with a compatibility other
// than the global BACKWARD sets the subject's level (the package reads
// GET /config/{subject}, expects 404 for a subject with none, then PUTs
// it); the next registration finds it.
async function compatibility () {
  const subject = 'js-full-value'
  const s = (fields) => JSON.stringify({ type: 'record', name: 'Full', fields })
  const opts = { subject, compatibility: COMPATIBILITY.FULL }
  await registry.register({ type: SchemaType.AVRO, schema: s([{ name: 'a', type: 'int' }]) }, opts)
  await registry.register({ type: SchemaType.AVRO, schema: s([{ name: 'a', type: 'int' }, { name: 'b', type: 'int', default: 0 }]) }, opts)
  // FULL refuses a field added without a default (BACKWARD alone would too,
  // but FULL also refuses removing one without a default, which BACKWARD allows).
  await refused(() => registry.register({ type: SchemaType.AVRO, schema: s([{ name: 'b', type: 'int', default: 0 }]) }, opts), 409, 'FULL: field removed without default')
  // Asking for another level than the subject's is the package's own refusal.
  await assert.rejects(registry.register({ type: SchemaType.AVRO, schema: s([{ name: 'a', type: 'int' }]) }, { subject }),
    /Compatibility does not match the configuration \(BACKWARD != FULL\)/)
}

// roundTrip produces the package's records to topics with full value
// validation, created through kafkajs admin; the good land and decode, a
// record framed with an unknown id is refused with INVALID_RECORD.
async function roundTrip (avroID, jsonID, proto) {
  const kafka = new Kafka({ clientId: 'floe-jsregistry', brokers: [broker], logLevel: logLevel.NOTHING })
  const admin = kafka.admin()
  await admin.connect()
  const topics = ['js-orders', 'js-people', 'js-items']
  await admin.createTopics({
    waitForLeaders: true,
    topics: topics.map(topic => ({
      topic,
      numPartitions: 1,
      configEntries: [{ name: 'confluent.value.schema.validation', value: 'full' }],
    })),
  })
  const described = await admin.describeConfigs({
    resources: [{ type: 2, name: 'js-orders', configNames: ['confluent.value.schema.validation'] }],
  })
  assert.equal(described.resources[0].configEntries[0].configValue, 'full')
  await admin.disconnect()

  // TopicNameStrategy: each topic's value subject holds its schema.
  const avroSchema = await registry.getSchema(avroID)
  const ordersID = (await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(avroSchema) }, { subject: 'js-orders-value' })).id
  assert.equal(ordersID, avroID, 'the same schema under another subject keeps its id')
  const person = (await registry.register({ type: SchemaType.JSON, schema: JSON.stringify({ type: 'object', properties: { id: { type: 'integer' } }, required: ['id'] }) }, { subject: 'js-people-value' })).id
  const itemsSchema = await (await fetch(`${host}/schemas/ids/${proto.id}`)).json()
  const itemsID = (await registry.register({ type: SchemaType.PROTOBUF, schema: itemsSchema.schema }, { subject: 'js-items-value' })).id
  assert.equal(itemsID, proto.id)

  const producer = kafka.producer({ allowAutoTopicCreation: false, retry: { retries: 0 } })
  await producer.connect()
  const orders = [{ id: 1, amount: 2.5 }, { id: 2, amount: 10 }]
  await producer.send({
    topic: 'js-orders',
    messages: await Promise.all(orders.map(async (o, i) => ({ key: `o${i}`, value: await registry.encode(avroID, o) }))),
  })
  await producer.send({ topic: 'js-people', messages: [{ value: await registry.encode(person, { id: 42 }) }] })
  // Protobuf: Confluent's framing (message index [0]) lands; the package's
  // own framing, without message indexes, is read as indexes and refused.
  await producer.send({ topic: 'js-items', messages: [{ value: proto.confluent }] })
  const e = await producer.send({ topic: 'js-items', messages: [{ value: proto.enc }] }).then(() => null, e => e)
  assert.ok(e && e.type === 'INVALID_RECORD', `protobuf without message indexes: ${e}`)

  for (const [topic, id, payload] of [
    ['js-orders', 987654, (await registry.encode(avroID, orders[0])).subarray(5)],
    ['js-orders', jsonID, Buffer.from('{"id":1}')], // registered, but not under js-orders-value
    ['js-orders', avroID, Buffer.from([0x02])], // truncated: does not decode
    ['js-people', person, Buffer.from('{"id":"x"}')], // valid JSON, not the schema's
  ]) {
    const err = await producer.send({ topic, messages: [{ value: frame(id, payload) }] }).then(() => null, e => e)
    assert.ok(err && err.type === 'INVALID_RECORD', `${topic} id ${id} payload ${payload.toString('hex')}: ${err}`)
  }
  await producer.disconnect()

  const consumer = kafka.consumer({ groupId: 'floe-jsregistry', maxWaitTimeInMs: 200 })
  await consumer.connect()
  await consumer.subscribe({ topics, fromBeginning: true })
  const got = { 'js-orders': [], 'js-people': [], 'js-items': [] }
  let finish
  const done = new Promise(resolve => { finish = resolve })
  await consumer.run({
    eachMessage: async ({ topic, message }) => {
      const v = await registry.decode(message.value)
      got[topic].push(topic === 'js-orders' ? { key: message.key.toString(), ...v } : { ...v })
      if (got['js-orders'].length + got['js-people'].length + got['js-items'].length >= 4) finish()
    },
  })
  const timer = setTimeout(() => { throw new Error(`timeout: got ${JSON.stringify(got)}`) }, 60000)
  await done
  clearTimeout(timer)
  await consumer.disconnect()
  assert.deepEqual(got['js-orders'], [{ key: 'o0', ...orders[0] }, { key: 'o1', ...orders[1] }])
  assert.deepEqual(got['js-people'], [{ id: 42 }])
  assert.equal(got['js-items'].length, 1)
  assert.equal(got['js-items'][0].name, 'pen')
}

async function main () {
  const avroID = await avro()
  const jsonID = await json()
  const proto = await protobuf()
  await compatibility()
  await roundTrip(avroID, jsonID, proto)
  console.log('ok')
}

main().catch((e) => { console.error(e); process.exit(1) })
