// Package crc32c is CRC-32C (Castagnoli), the checksum of Kafka record
// batches and of S3's x-amz-checksum-crc32c, with Combine: the checksum of
// two byte strings one after the other from theirs. floe derives the
// checksum of an object it PUTs from the checksums its producers already
// sent with their batches, instead of reading every byte once more.
package crc32c

import "hash/crc32"

// poly is the Castagnoli polynomial, bit-reversed as hash/crc32 uses it.
const poly = 0x82f63b78

var table = crc32.MakeTable(crc32.Castagnoli)

// Checksum returns the CRC-32C of b.
func Checksum(b []byte) uint32 { return crc32.Checksum(b, table) }

// Update returns the CRC-32C of the bytes crc covers followed by b.
func Update(crc uint32, b []byte) uint32 { return crc32.Update(crc, table, b) }

// Combine returns the CRC-32C of A followed by B from crcA = Checksum(A),
// crcB = Checksum(B) and lenB = len(B), without A's or B's bytes, in time
// logarithmic in lenB.
//
// A CRC is the remainder of the message's polynomial (with its initial and
// final inversions) modulo P over GF(2). Appending lenB bytes multiplies
// A's remainder by x^(8·lenB), and the inversions B's CRC carries already
// account for A's, so CRC(A·B) = CRC(A)·x^(8·lenB) mod P xor CRC(B).
func Combine(crcA, crcB uint32, lenB int64) uint32 {
	return mulModP(xPow8n(lenB), crcA) ^ crcB
}

// mulModP returns a·b mod P. Polynomials are bit-reversed, as the CRC
// itself: the most significant bit holds x^0.
func mulModP(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
		}
		// b = b·x mod P
		if b&1 != 0 {
			b = b>>1 ^ poly
		} else {
			b >>= 1
		}
	}
	return p
}

// x2k[k] is x^(2^k) mod P.
var x2k = func() (t [64]uint32) {
	p := uint32(1) << 30 // x^1
	for k := range t {
		t[k] = p
		p = mulModP(p, p)
	}
	return t
}()

// xPow8n returns x^(8n) mod P: the product of x^(2^k) over the bits k of
// 8n.
func xPow8n(n int64) uint32 {
	p := uint32(1) << 31 // x^0
	for k := 3; n > 0; k++ {
		if n&1 != 0 {
			p = mulModP(x2k[k], p)
		}
		n >>= 1
	}
	return p
}
