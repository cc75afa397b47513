import { ApiError } from '../../src/platform/http/api-error.js';
import { MemberChanges } from '../../src/scim/scim-group-members.js';
import { applyOperation, bodyDoc, type Doc } from '../../src/scim/scim-patch.js';
import { parsePatchBody } from '../../src/scim/scim-patch-body.js';
import { USER_DOC, userInput } from '../../src/scim/scim-user-mapping.js';

const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

function patched(doc: Doc, operations: unknown[]): Doc {
  for (const operation of parsePatchBody({ schemas: [PATCH], Operations: operations }))
    applyOperation(doc, USER_DOC, operation);
  return doc;
}

function rule(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (error instanceof ApiError) return (error.details.fields as { rule: string }[])[0]?.rule ?? '';
    throw error;
  }
  return 'none';
}

const base = (): Doc => ({
  userName: 'ana@x.com',
  displayName: 'Ana',
  emails: [{ value: 'ana@x.com', type: 'work', primary: true }],
  active: true,
});

describe('SCIM PATCH: the forms identity providers send, applied to the document', () => {
  it('op in any letter case; replace without path with dotted keys; booleans as strings read by the mapping', () => {
    const doc = patched(base(), [
      { op: 'Replace', value: { 'name.givenName': 'Ana', 'name.familyName': 'Silva', active: 'False' } },
      { op: 'REPLACE', path: 'displayName', value: 'Ana S.' },
    ]);
    expect(doc).toMatchObject({
      name: { givenName: 'Ana', familyName: 'Silva' },
      displayName: 'Ana S.',
      active: 'False',
    });
    expect(userInput(doc).active).toBe(false);
  });

  it('a filtered path that matches nothing makes the value it describes; one that matches changes it', () => {
    const doc = patched(base(), [
      { op: 'replace', path: 'phoneNumbers[type eq "mobile"].value', value: '+351912345678' },
    ]);
    expect(doc.phoneNumbers).toEqual([{ type: 'mobile', value: '+351912345678' }]);
    patched(doc, [{ op: 'replace', path: 'emails[type eq "work"].value', value: 'ana.s@x.com' }]);
    expect(doc.emails).toEqual([{ value: 'ana.s@x.com', type: 'work', primary: true }]);
    expect(userInput(doc)).toMatchObject({ email: 'ana.s@x.com', phone: '+351912345678' });
  });

  it('attribute names are case-insensitive; the enterprise extension by URN, with or without path', () => {
    const doc = patched(base(), [
      { op: 'add', path: 'DISPLAYNAME', value: 'Upper' },
      { op: 'add', path: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department', value: 'Field' },
      { op: 'add', value: { 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User': { employeeNumber: '7' } } },
    ]);
    expect(doc).toMatchObject({
      displayName: 'Upper',
      'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User': { department: 'Field', employeeNumber: '7' },
    });
  });

  it('unknown attributes are ignored; read-only ones refused (mutability); prototype keys refused (invalidPath) and never assigned', () => {
    const doc = patched(base(), [
      { op: 'add', path: 'title', value: 'x' },
      { op: 'add', value: { preferredLanguage: 'en' } },
    ]);
    expect(doc).toEqual(base());
    expect(rule(() => patched(base(), [{ op: 'replace', path: 'id', value: '9' }]))).toBe('mutability');
    expect(rule(() => patched(base(), [{ op: 'replace', path: 'meta.version', value: 'x' }]))).toBe('mutability');
    expect(rule(() => patched(base(), [{ op: 'add', path: '__proto__', value: { polluted: true } }]))).toBe(
      'invalidPath',
    );
    expect(rule(() => patched(base(), [{ op: 'add', path: 'name.__proto__', value: { polluted: true } }]))).toBe(
      'invalidPath',
    );
    expect(
      rule(() => patched(base(), [{ op: 'add', value: JSON.parse('{"__proto__": {"polluted": true}}') as unknown }])),
    ).toBe('invalidPath');
    expect(
      rule(() =>
        patched(base(), [
          { op: 'add', path: 'name', value: JSON.parse('{"constructor": {"prototype": {"x": 1}}}') as unknown },
        ]),
      ),
    ).toBe('invalidPath');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(
      rule(() => bodyDoc(USER_DOC, JSON.parse('{"userName": "a", "__proto__": {"polluted": true}}') as unknown)),
    ).toBe('invalidPath');
  });

  it('the body: schemas, Operations, op, path and value checked with SCIM’s types', () => {
    expect(rule(() => parsePatchBody([]))).toBe('invalidSyntax');
    expect(rule(() => parsePatchBody({ schemas: ['other'], Operations: [{ op: 'add', value: {} }] }))).toBe(
      'invalidSyntax',
    );
    expect(rule(() => parsePatchBody({ Operations: [] }))).toBe('invalidSyntax');
    expect(rule(() => parsePatchBody({ Operations: [{ op: 'move', value: 1 }] }))).toBe('invalidSyntax');
    expect(rule(() => parsePatchBody({ Operations: [{ op: 'remove' }] }))).toBe('noTarget');
    expect(rule(() => parsePatchBody({ Operations: [{ op: 'add', path: 'displayName' }] }))).toBe('invalidValue');
    expect(rule(() => parsePatchBody({ Operations: [{ op: 'add', path: 'emails[type eq]', value: 1 }] }))).toBe(
      'invalidFilter',
    );
    expect(rule(() => parsePatchBody({ Operations: [{ op: 'add', path: 'emails[type eq "x"', value: 1 }] }))).toBe(
      'invalidPath',
    );
    expect(rule(() => parsePatchBody({ Operations: [{ op: 'add', path: 'a b', value: 1 }] }))).toBe('invalidPath');
    expect(
      rule(() => parsePatchBody({ Operations: Array.from({ length: 1001 }, () => ({ op: 'add', value: {} })) })),
    ).toBe('invalidValue');
  });

  it('PUT and POST bodies: id must be the target (mutability), meta ignored, email from userName when none is sent', () => {
    expect(rule(() => bodyDoc(USER_DOC, { id: '5', userName: 'a@b.co' }, '6'))).toBe('mutability');
    expect(rule(() => bodyDoc(USER_DOC, { id: '5', userName: 'a@b.co' }))).toBe('mutability');
    const doc = bodyDoc(USER_DOC, { id: '6', userName: 'a@b.co', meta: { version: 'x' }, UserName: 'b@b.co' }, '6');
    expect(userInput(doc)).toMatchObject({ user_name: 'b@b.co', email: 'b@b.co', display_name: 'b@b.co' });
    expect(rule(() => userInput(bodyDoc(USER_DOC, { userName: 'not-an-email' })))).toBe('invalidValue');
  });
});

describe('SCIM group members: what a PATCH adds and removes, read from the group only when it must', () => {
  const load = (members: string[]) => {
    let loads = 0;
    const changes = new MemberChanges(() => {
      loads += 1;
      return Promise.resolve(members.map((value) => ({ value, type: 'User' as const })));
    });
    return { changes, loads: () => loads };
  };
  const ops = (operations: unknown[]) => parsePatchBody({ Operations: operations });

  it('adds and removes by value without reading the members', async () => {
    const { changes, loads } = load(['1', '2']);
    for (const operation of ops([
      { op: 'add', path: 'members', value: [{ value: '3' }, { value: '4' }] },
      { op: 'remove', path: 'members', value: [{ value: '4' }, { value: '1' }] },
    ]))
      await changes.apply(operation, operation.value);
    expect(await changes.changes()).toEqual({
      add: [{ value: '3', type: 'User' }],
      remove: [
        { value: '4', type: 'User' },
        { value: '1', type: 'User' },
      ],
    });
    expect(loads()).toBe(0);
  });

  it('a filtered removal and a replace read them once and answer the difference', async () => {
    const { changes, loads } = load(['1', '2', '3']);
    for (const operation of ops([
      { op: 'remove', path: 'members[value eq "2" or value eq "3"]' },
      { op: 'add', path: 'members', value: [{ value: '9', type: 'Group' }] },
    ]))
      await changes.apply(operation, operation.value);
    expect(await changes.changes()).toEqual({
      add: [{ value: '9', type: 'Group' }],
      remove: [
        { value: '2', type: 'User' },
        { value: '3', type: 'User' },
      ],
    });
    const replaced = load(['1', '2']);
    for (const operation of ops([{ op: 'replace', path: 'members', value: [{ value: '2' }, { value: '5' }] }]))
      await replaced.changes.apply(operation, operation.value);
    expect(await replaced.changes.changes()).toEqual({
      add: [{ value: '5', type: 'User' }],
      remove: [{ value: '1', type: 'User' }],
    });
    expect(loads() + replaced.loads()).toBe(2);
  });

  it('a member value that is no id, or a type that is neither User nor Group, is invalidValue', async () => {
    const { changes } = load([]);
    const [bad] = ops([{ op: 'add', path: 'members', value: [{ value: 'abc' }] }]);
    await expect(changes.apply(bad ?? { op: 'add' }, bad?.value)).rejects.toMatchObject({
      details: { fields: [{ rule: 'invalidValue' }] },
    });
    const [typed] = ops([{ op: 'add', path: 'members', value: [{ value: '1', type: 'Device' }] }]);
    await expect(changes.apply(typed ?? { op: 'add' }, typed?.value)).rejects.toMatchObject({
      details: { fields: [{ rule: 'invalidValue' }] },
    });
  });
});
