/**
 * The published vectors of the sealed format (docs/test-vectors/sealed-v1.json, specified in
 * docs/repository-encryption.md). Every output is recomputed two ways:
 *
 * - with the real functions (`sealer`, `buildEnvelope`, `wrapDataKey`), their random inputs
 *   injected from the file, and opened again with `unlock` and `opener`;
 * - by hand in this file, from node:crypto primitives and framing written here (u64 BE lengths with
 *   Buffer's own writers, not core/encoding), in the spec's order — so a wrong order, width, label
 *   or salt in src/repository/seal*.ts fails here even though the vectors came from those functions.
 *
 * An X25519 known answer (RFC 7748's first Diffie-Hellman test key pair) anchors the key encoding
 * independently of this implementation. The vectors were generated once and are fixed; never
 * regenerate them to make this test pass.
 */
import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  createSecretKey,
  hkdfSync,
  scryptSync,
} from 'node:crypto';
import { createPrivateKey, createPublicKey, diffieHellman } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Readable, type Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/core/index.js';
import {
  buildEnvelope,
  opener,
  parseEnvelope,
  parseKeySet,
  parseRecipient,
  recipientFingerprint,
  recipientOf,
  resolveKeyReference,
  resolveRecipient,
  sealer,
  unlock,
  wrapDataKey,
  type SealedEnvelope,
  type SealedEntry,
  type KeySet,
} from '../../src/repository/seal.js';

const REPO = resolve(import.meta.dirname, '../..');

interface VectorFile {
  readonly format: string;
  readonly inputs: {
    readonly data_key_hex: string;
    readonly backup_id: string;
    readonly segment_bytes: number;
    readonly objects: readonly { name: string; plaintext_hex: string; key_salt_hex: string }[];
    readonly x25519_identity: string;
    readonly passphrase: string;
    readonly wrap_random: Record<
      'x25519_ephemeral_secret_hex' | 'x25519_nonce_hex' | 'scrypt_salt_hex' | 'scrypt_nonce_hex',
      string
    >;
  };
  readonly derived: {
    readonly x25519_recipient: string;
    readonly x25519_recipient_fingerprint: string;
    readonly object_keys_hex: Record<string, string>;
    readonly envelope_mac_key_hex: string;
    readonly key_commitment_hex: string;
    readonly envelope_mac_input: string;
    readonly segments: readonly {
      object: string;
      index: number;
      last: boolean;
      nonce_hex: string;
      ad_hex: string;
      sealed_hex: string;
    }[];
  };
  readonly outputs: { sealed_hex: Record<string, string>; envelope: SealedEnvelope; key_set: KeySet };
}

const V = JSON.parse(readFileSync(join(REPO, 'docs/test-vectors/sealed-v1.json'), 'utf8')) as VectorFile;
const { inputs, derived, outputs } = V;
const hex = (h: string) => Buffer.from(h, 'hex');
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const dataKeyRaw = hex(inputs.data_key_hex);

/** u64 BE byte length, then the bytes — for each part (written here, independently of core/encoding). */
function frame(parts: readonly (string | Buffer)[]): Buffer {
  return Buffer.concat(
    parts.flatMap((p) => {
      const bytes = typeof p === 'string' ? Buffer.from(p, 'utf8') : p;
      const len = Buffer.alloc(8);
      len.writeBigUInt64BE(BigInt(bytes.length));
      return [len, bytes];
    }),
  );
}

const hkdf = (ikm: Buffer, salt: Buffer, info: Buffer) => Buffer.from(hkdfSync('sha256', ikm, salt, info, 32));
const FORMAT_SALT = Buffer.from('loopx.sealed/v1');

async function run(bytes: Buffer, t: Transform): Promise<Buffer> {
  const out: Buffer[] = [];
  await pipeline(Readable.from(bytes.length ? [bytes] : []), t, async (src: AsyncIterable<Buffer>) => {
    for await (const c of src) out.push(c);
  });
  return Buffer.concat(out);
}

describe('sealed-v1 test vectors', () => {
  it('the real functions, given the file’s random inputs, write exactly the published bytes', async () => {
    const dataKey = createSecretKey(dataKeyRaw);
    const entries: SealedEntry[] = [];
    for (const o of inputs.objects) {
      const rng = () => hex(o.key_salt_hex);
      const s = sealer({
        dataKey,
        backupId: inputs.backup_id,
        objectName: o.name,
        segmentBytes: inputs.segment_bytes,
        rng,
      });
      expect((await run(hex(o.plaintext_hex), s)).toString('hex'), o.name).toBe(outputs.sealed_hex[o.name]);
      entries.push(s.summary());
    }
    const envelope = buildEnvelope({ dataKey, backupId: inputs.backup_id, objects: entries });
    expect(envelope).toEqual(outputs.envelope);
    const { mac: _mac, ...body } = envelope;
    expect(canonicalJson(body)).toBe(derived.envelope_mac_input);

    const r = inputs.wrap_random;
    const draws = [r.x25519_ephemeral_secret_hex, r.x25519_nonce_hex, r.scrypt_salt_hex, r.scrypt_nonce_hex].map(hex);
    const rng = (n: number) => {
      const next = draws.shift()!;
      expect(next.length).toBe(n);
      return next;
    };
    const recipients = [parseRecipient(derived.x25519_recipient), resolveRecipient('env:P', { P: inputs.passphrase })];
    expect(await wrapDataKey(dataKey, inputs.backup_id, recipients, { rng })).toEqual(outputs.key_set);
    expect(draws).toEqual([]);
  });

  it('by hand: object keys, nonces, associated data and every sealed segment', () => {
    for (const o of inputs.objects) {
      const info = frame(['object key', inputs.backup_id, o.name, hex(o.key_salt_hex)]);
      const key = hkdf(dataKeyRaw, FORMAT_SALT, info);
      expect(key.toString('hex'), o.name).toBe(derived.object_keys_hex[o.name]);
      const plain = hex(o.plaintext_hex);
      const segments = derived.segments.filter((s) => s.object === o.name);
      const sealed: Buffer[] = [];
      segments.forEach((seg, i) => {
        const last = i === segments.length - 1;
        expect([seg.index, seg.last]).toEqual([i, last]);
        const nonce = Buffer.alloc(12);
        nonce.writeUIntBE(i, 5, 6); // 11 bytes big-endian index: bytes 0-4 are zero below 2^48
        nonce[11] = last ? 1 : 0;
        expect(nonce.toString('hex')).toBe(seg.nonce_hex);
        const index = Buffer.alloc(8);
        index.writeBigUInt64BE(BigInt(i));
        const ad = frame(['loopx.sealed/v1', inputs.backup_id, o.name, index, Buffer.from([last ? 1 : 0])]);
        expect(ad.toString('hex')).toBe(seg.ad_hex);
        const part = plain.subarray(i * inputs.segment_bytes, (i + 1) * inputs.segment_bytes);
        const cipher = createCipheriv('aes-256-gcm', key, nonce).setAAD(ad);
        const out = Buffer.concat([cipher.update(part), cipher.final(), cipher.getAuthTag()]);
        expect(out.toString('hex')).toBe(seg.sealed_hex);
        sealed.push(out);
      });
      const whole = Buffer.concat(sealed);
      expect(whole.toString('hex')).toBe(outputs.sealed_hex[o.name]);
      const entry = outputs.envelope.objects.find((e) => e.name === o.name)!;
      expect(entry.segments).toEqual(sealed.map(sha));
      expect([entry.sealed_sha256, entry.sealed_size, entry.plaintext_size]).toEqual([
        sha(whole),
        whole.length,
        plain.length,
      ]);
    }
  });

  it('by hand: key commitment and envelope MAC', () => {
    const commitment = hkdf(dataKeyRaw, FORMAT_SALT, frame(['key commitment']));
    expect(commitment.toString('hex')).toBe(derived.key_commitment_hex);
    expect(outputs.envelope.key_commitment).toBe(derived.key_commitment_hex);
    const macKey = hkdf(dataKeyRaw, FORMAT_SALT, frame(['envelope mac']));
    expect(macKey.toString('hex')).toBe(derived.envelope_mac_key_hex);
    const mac = createHmac('sha256', macKey).update(derived.envelope_mac_input, 'utf8').digest('hex');
    expect(mac).toBe(outputs.envelope.mac);
  });

  it('by hand: each stanza unwraps to the data key', () => {
    const [x, s] = outputs.key_set.stanzas;
    const ad = (type: string) => frame(['loopx.sealed-keys/v1', inputs.backup_id, type]);
    const open = (key: Buffer, nonce: string, wrapped: string, aad: Buffer) => {
      const w = hex(wrapped);
      const d = createDecipheriv('aes-256-gcm', key, hex(nonce)).setAAD(aad);
      d.setAuthTag(w.subarray(32));
      return Buffer.concat([d.update(w.subarray(0, 32)), d.final()]);
    };
    if (x?.type !== 'x25519' || s?.type !== 'scrypt') throw new Error('stanza order');
    const raw = Buffer.from(inputs.x25519_identity.slice('loopx-x25519-key:'.length), 'base64url');
    const der = Buffer.concat([hex('302e020100300506032b656e04220420'), raw]);
    const privateKey = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
    const recipientRaw = Buffer.from(derived.x25519_recipient.slice('loopx-x25519-pub:'.length), 'base64url');
    expect(x.recipient).toBe(sha(recipientRaw).slice(0, 32));
    expect(x.recipient).toBe(derived.x25519_recipient_fingerprint);
    const spki = (k: Buffer) =>
      createPublicKey({ key: Buffer.concat([hex('302a300506032b656e032100'), k]), format: 'der', type: 'spki' });
    const shared = diffieHellman({ privateKey, publicKey: spki(hex(x.ephemeral)) });
    const wrapKey = hkdf(shared, Buffer.concat([hex(x.ephemeral), recipientRaw]), frame(['loopx.sealed/v1 x25519']));
    expect(open(wrapKey, x.nonce, x.wrapped, ad('x25519'))).toEqual(dataKeyRaw);

    const salt = Buffer.concat([Buffer.from('loopx.sealed/v1 scrypt'), hex(s.salt)]);
    const opts = { N: 2 ** s.log_n, r: s.r, p: s.p, maxmem: 256 << 20 };
    const passKey = scryptSync(Buffer.from(inputs.passphrase, 'utf8'), salt, 32, opts);
    expect(open(passKey, s.nonce, s.wrapped, ad('scrypt'))).toEqual(dataKeyRaw);
  });

  it('X25519 keys are encoded as RFC 7748 expects (its first test key pair)', () => {
    const alice = Buffer.from('77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a', 'hex');
    const recipient = recipientOf(`loopx-x25519-key:${alice.toString('base64url')}`);
    expect(Buffer.from(recipient.slice('loopx-x25519-pub:'.length), 'base64url').toString('hex')).toBe(
      '8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a',
    );
    expect(recipientOf(inputs.x25519_identity)).toBe(derived.x25519_recipient);
    expect(recipientFingerprint(derived.x25519_recipient)).toBe(derived.x25519_recipient_fingerprint);
  });

  it('the published envelope and key set unlock with the identity and open to the plaintexts', async () => {
    const envelope = parseEnvelope(JSON.stringify(outputs.envelope));
    const keySet = parseKeySet(JSON.stringify(outputs.key_set));
    const identity = resolveKeyReference('env:ID', { ID: inputs.x25519_identity });
    const dataKey = await unlock({ envelope, keySet, identity, backupId: inputs.backup_id });
    for (const o of inputs.objects) {
      const entry = envelope.objects.find((e) => e.name === o.name)!;
      const t = opener({ dataKey, backupId: inputs.backup_id, objectName: o.name, entry });
      expect((await run(hex(outputs.sealed_hex[o.name]!), t)).toString('hex')).toBe(o.plaintext_hex);
    }
  });

  // docs/schemas/repository-sealed-envelope-v1.schema.json (its $defs/key_set for the key set).
  it('the envelope and the key set validate against the published schema', () => {
    const ajv = new Ajv2020({ strict: true, allErrors: true });
    for (const f of readdirSync(join(REPO, 'docs/schemas')).filter((n) => n.endsWith('.schema.json')))
      ajv.addSchema(JSON.parse(readFileSync(join(REPO, 'docs/schemas', f), 'utf8')) as Record<string, unknown>);
    const id = 'https://loopx.dev/schemas/repository-sealed-envelope-v1.json';
    for (const [ref, doc] of [
      [id, outputs.envelope],
      [`${id}#/$defs/key_set`, outputs.key_set],
    ] as const) {
      const validate = ajv.getSchema(ref)!;
      expect(validate(doc) ? [] : validate.errors, ref).toEqual([]);
      expect(validate({ ...doc, extra: 1 }), ref).toBe(false);
    }
  });
});
