/**
 * The recovery activation switch, through the real CLI in separate processes: an operator turns
 * recovery activation off for their user (`recover disable-activation --reason`), and from then on
 * every `recover plan`, `apply` and `resolve` of that user is refused `recover_activation_disabled`
 * before it writes anything, while `backup-state verify`, `audit show` and `recover status` keep
 * working; turned on again, the same recovery goes on. Another user's run
 * authority is not affected.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { REPO, loopxAsync } from '../support/cli.js';
import { as, backupVerified, newUser, planInto, refusedAs, type User } from './support/adopt-users.js';

const DISABLED = { status: 3, code: 'recover_activation_disabled' };

// Each answer of the switch is checked against docs/schemas/recover-activation.schema.json.
const ajv = new Ajv2020({ strict: true, allErrors: true });
const validate = ajv.compile(
  JSON.parse(readFileSync(join(REPO, 'docs/schemas/recover-activation.schema.json'), 'utf8')) as object,
);
const valid = <T>(doc: T): T => {
  expect(validate(doc) ? [] : validate.errors).toEqual([]);
  return doc;
};

describe('the recovery activation switch', () => {
  let u: User;
  let destination: string;
  let digest: string;

  beforeAll(async () => {
    u = newUser('loopx-activation-');
    const at = ['--root', u.root];
    await as(u, ['init', ...at]);
    await as(u, ['goal', 'create', 'launch', '--title', 'Ship the launch post', ...at]);
    await as(u, ['todo', 'add', '--goal', 'launch', '--title', 'Draft', ...at]);
    expect(valid(await as(u, ['recover', 'activation']))).toEqual({ disabled: false, reason: null, changed_at: null });
    valid(await as(u, ['recover', 'disable-activation', '--reason', 'release under review']));
  }, 60_000);

  it('off: verify and audit work, and a plan is refused before it writes anything', async () => {
    expect(valid(await as(u, ['recover', 'activation']))).toMatchObject({
      disabled: true,
      reason: 'release under review',
    });
    await backupVerified(u);
    const audit = await loopxAsync(['backup-state', 'audit', 'show', u.workspace, '--json']);
    expect(audit.status, audit.stderr).toBe(0);
    destination = join(u.dir, 'recovered');
    const plan = ['recover', 'plan', '--from', u.workspace, '--goal', 'launch', '--destination', destination];
    expect(await refusedAs(u, [...plan, '--root', u.root])).toEqual(DISABLED);
    expect(existsSync(destination)).toBe(false);
    const refused = await loopxAsync([...plan, '--root', u.root, '--authority-dir', u.authority, '--json']);
    expect(refused.json().error.next_action).toMatch(
      /^turn it back on when recovery may continue: loopx recover enable-activation( |$)/,
    );
    // Another user's authority has its own switch.
    const other = newUser('loopx-activation-other-');
    expect(await as(other, ['recover', 'activation'])).toMatchObject({ disabled: false });
  }, 120_000);

  it('a plan made while on is not applied or resolved while off; its status still answers', async () => {
    await as(u, ['recover', 'enable-activation']);
    digest = (await planInto(u, destination)).plan_digest;
    await as(u, ['recover', 'disable-activation']);
    const before = readdirSync(destination).sort();
    expect(await refusedAs(u, ['recover', 'apply', '--destination', destination, '--confirm', digest])).toEqual(
      DISABLED,
    );
    expect(await refusedAs(u, ['recover', 'resolve', '--destination', destination, '--hold', 'h1'])).toEqual(DISABLED);
    expect(readdirSync(destination).sort()).toEqual(before);
    expect((await as(u, ['recover', 'status', '--destination', destination])).state).toBe('adoption_prepared');
  }, 60_000);

  it('on again, the same plan is applied', async () => {
    expect(valid(await as(u, ['recover', 'enable-activation']))).toMatchObject({ disabled: false, reason: null });
    const applied = await as(u, ['recover', 'apply', '--destination', destination, '--confirm', digest]);
    expect(applied.state).toBe('complete');
  }, 120_000);
});
