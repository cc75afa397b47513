// `nest g action <domain>[/<resource>] <verb>` (or `npm run generate -- action <domain> <verb>
// [--controller <resource>] [--device-param id|none]`): adds POST /v1/admin/<resource>/{id}/<verb>
// in the project's own style, for any of the six domain modules. It edits the resource's controller, the domain's module and the permission catalogue,
// and creates an action class (one transaction with its audit event), a request DTO, a migration
// seeding the permission and an e2e spec that fails until the action is implemented. On a
// device-scoped resource the route finds its device through the resource's locator (path
// parameter `id`; `--device-param none` opts out), so the device authority layer applies. Every file it writes is formatted with Prettier.
const { join } = require('node:path');
const process = require('node:process');
const { SchematicsException } = require('@angular-devkit/schematics');
const prettier = require('prettier');

/**
 * Each domain folder, its resources (URL segment → singular name for audit events, permission
 * prefix) and, for device-scoped resources, the locator that finds the device of a record.
 */
const DOMAINS = {
  users: { default: 'users', resources: { users: { resource: 'user', prefix: 'users' } } },
  authorities: {
    default: 'authorities',
    resources: {
      authorities: { resource: 'authority', prefix: 'authorities', locator: 'AUTHORITY', fixture: 'authority' },
      devices: { resource: 'device', prefix: 'devices', locator: 'DEVICE', fixture: 'device' },
    },
  },
  grants: {
    default: 'permission-grants',
    resources: {
      'permission-grants': { resource: 'permission_grant', prefix: 'permission_grants' },
      'authority-permissions': {
        resource: 'authority_permission',
        prefix: 'authority_permissions',
        locator: 'AUTHORITY_PERMISSION',
        fixture: 'authority_permission',
      },
    },
  },
  inbox: { default: 'inbox', resources: { inbox: { resource: 'inbox_message', prefix: 'inbox' } } },
  'read-state': {
    default: 'message-read-state',
    resources: { 'message-read-state': { resource: 'message_read_state', prefix: 'read_state' } },
  },
  'mobile-devices': {
    default: 'mobile-devices',
    resources: { 'mobile-devices': { resource: 'mobile_device', prefix: 'mobile_devices' } },
  },
};

const DEVICE_SCOPED = /^(devices|authorities|authority_permissions)\./;

const pascal = (text) =>
  text
    .split(/[-_.]/)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
const camel = (text) => {
  const value = pascal(text);
  return value.charAt(0).toLowerCase() + value.slice(1);
};
const snake = (text) => text.replace(/-/g, '_');
// A vowel sound takes "an": a, e, i, o, and a u not said "you" (an update; a user, a unit).
const article = (word) => (/^(?:[aeio]|u(?!s[aeiou]|ni|ti|bi|ri|r[ao]))/i.test(word) ? 'an' : 'a');

function read(tree, path) {
  const buffer = tree.read(path);
  if (buffer === null) throw new SchematicsException(`${path} does not exist`);
  return buffer.toString('utf8');
}

/** Inserts `text` before the last closing brace of the file (the class's). */
function beforeLastBrace(source, text) {
  const index = source.lastIndexOf('}');
  return `${source.slice(0, index)}${text}${source.slice(index)}`;
}

function addImport(source, line) {
  if (source.includes(line)) return source;
  const lastImport = source.lastIndexOf('\nimport ');
  const end = source.indexOf('\n', source.indexOf(';', lastImport)) + 1;
  return `${source.slice(0, end)}${line}\n${source.slice(end)}`;
}

/** Adds names to the `import [type] { … } from '<module>'` statement (one or many lines), or a new import. */
function addNamedImports(source, module, names) {
  const pattern = new RegExp(`import (type )?\\{([^}]*)\\} from '${module.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}';`);
  const match = pattern.exec(source);
  if (match === null) return addImport(source, `import { ${names.join(', ')} } from '${module}';`);
  const typeOnly = match[1] !== undefined;
  const bare = (name) => name.replace(/^type /, '');
  const existing = match[2]
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  const missing = names
    .filter((name) => !existing.some((present) => bare(present) === bare(name)))
    .map((name) => (typeOnly ? bare(name) : name));
  if (missing.length === 0) return source;
  return source.replace(
    match[0],
    `import ${typeOnly ? 'type ' : ''}{ ${[...existing, ...missing].join(', ')} } from '${module}';`,
  );
}

/** Adds a parameter to the controller's constructor, whether it is written on one line or many. */
function addConstructorParameter(source, parameter) {
  const start = source.indexOf('constructor(');
  if (start < 0) throw new SchematicsException('the controller has no constructor to inject the action into');
  const close = source.indexOf(') {}', start);
  const params = source
    .slice(start + 'constructor('.length, close)
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);
  const rebuilt = `constructor(\n${[...params, parameter].map((part) => `    ${part},`).join('\n')}\n  ) {}`;
  return `${source.slice(0, start)}${rebuilt}${source.slice(close + ') {}'.length)}`;
}

/** The fixture lines of a generated spec: a record of the resource on a device whose owner is `owner`. */
function deviceFixture(kind) {
  const device = 'const device = await createDevice({ ownerId: owner.user.id });';
  if (kind === 'device') return [device, 'return { id: device.id, deviceId: device.id };'];
  if (kind === 'authority')
    return [device, 'return { id: await createAuthority(device.id, (await createUser()).id), deviceId: device.id };'];
  return [
    device,
    "const authority = await createAuthority(device.id, (await createUser()).id, { permissions: ['devices.read'] });",
    "const [row] = await sql<{ id: number }>('SELECT id FROM authority_permissions WHERE authority_id = $1', [authority]);",
    'return { id: row?.id ?? 0, deviceId: device.id };',
  ];
}

/** A record of the resources without a device, inserted for a user (`userId`): name and statements. */
const RECORD_FIXTURES = {
  inbox_message: {
    name: 'createMessage',
    lines: [
      "const [message] = await sql<{ id: number }>(\"INSERT INTO inbox_messages (user_id, type, title, body) VALUES ($1, 'notice', 'Generated', 'Body') RETURNING id\", [userId]);",
      'return message?.id ?? 0;',
    ],
  },
  message_read_state: {
    name: 'createReadState',
    lines: [
      "const [message] = await sql<{ id: number }>(\"INSERT INTO inbox_messages (user_id, type, title, body) VALUES ($1, 'notice', 'Generated', 'Body') RETURNING id\", [userId]);",
      "const [row] = await sql<{ id: number }>('INSERT INTO message_read_state (message_id, user_id) VALUES ($1, $2) RETURNING id', [message?.id, userId]);",
      'return row?.id ?? 0;',
    ],
  },
  mobile_device: {
    name: 'createMobileDevice',
    lines: [
      'const [row] = await sql<{ id: number }>("INSERT INTO mobile_devices (user_id, platform, push_token) VALUES ($1, \'ios\', $2) RETURNING id", [userId, `token-${Date.now()}-${Math.random()}`]);',
      'return row?.id ?? 0;',
    ],
  },
  permission_grant: {
    name: 'createGrant',
    lines: [
      'const [row] = await sql<{ id: number }>("INSERT INTO permission_grants (user_id, permission_id) SELECT $1, id FROM permissions WHERE code = \'users.read\' RETURNING id", [userId]);',
      'return row?.id ?? 0;',
    ],
  },
};

function spec({ domain, verb, url, resource, permission, ActionClass, devices }) {
  const path = (id) => `\`/v1/admin/${url}/\${${id}}/${verb}\``;
  const fixture = devices === undefined ? [] : deviceFixture(devices.fixture);
  // Every spec acts on a real record of its resource, created for it.
  const record = RECORD_FIXTURES[resource];
  const target =
    devices !== undefined
      ? `await target()`
      : record === undefined
        ? `{ id: (await createUser()).id }`
        : `{ id: await ${record.name}((await createUser()).id) }`;
  const needsUser = devices === undefined || devices.fixture !== 'device';
  const helpers =
    devices === undefined ? [] : devices.fixture === 'device' ? ['createDevice'] : ['createAuthority', 'createDevice'];
  return `import { actor${needsUser ? ', createUser' : ''} } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
${helpers.length === 0 ? '' : `import { ${helpers.join(', ')} } from '../support/devices.js';\n`}
// Generated by \`nest g action ${domain} ${verb}\`: it fails until ${ActionClass}.run is implemented.
describe('POST /v1/admin/${url}/{id}/${verb}', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ widgets: false });
  });
  afterAll(() => t.close());
${
  record === undefined || devices !== undefined
    ? ''
    : `
  /** A ${resource.replace(/_/g, ' ')} of the user, to act on. */
  async function ${record.name}(userId: number): Promise<number> {
    ${record.lines.join('\n    ')}
  }
`
}${
    devices === undefined
      ? ''
      : `
  /** A ${resource.replace(/_/g, ' ')} on a device owned by \`owner\`. */
  async function target(owner: { user: { id: number } }): Promise<{ id: number; deviceId: number }> {
    ${fixture.join('\n    ')}
  }
`
  }
  it('${verb}s the ${resource.replace(/_/g, ' ')} and records the audit event', async () => {
    const root = await actor('super_admin');
    const { id } = ${devices === undefined ? target : "await target(await actor('operator'))"};
    const response = await t.http().post(${path('id')}).set('Authorization', root.auth).send({ reason: 'generated spec' });
    expect(response.status).toBe(200);
    expect(response.body.data).toEqual({ id });
    const events = await sql('SELECT action, reason FROM audit_events WHERE request_id = $1', [response.headers['x-request-id']]);
    expect(events).toEqual([{ action: '${resource}.${snake(verb)}', reason: 'generated spec' }]);
  });

  it('is refused without the permission ${permission}', async () => {
    const viewer = await actor('viewer');
    const { id${devices === undefined ? '' : ', deviceId'} } = ${devices === undefined ? target : "await target(await actor('operator'))"};
    const response = await t.http().post(${path('id')}).set('Authorization', viewer.auth).send({});
    expect(response.status).toBe(403);
    expect(response.body.error.details).toEqual({ permission: '${permission}'${devices === undefined ? '' : ', device_id: deviceId'} });
  });
${
  devices === undefined
    ? ''
    : `
  it('lets the owner of the device through the guard (the device authority layer)', async () => {
    const owner = await actor('operator');
    const { id } = await target(owner);
    const response = await t.http().post(${path('id')}).set('Authorization', owner.auth).send({});
    expect(response.status).not.toBe(403);
  });
`
}});
`;
}

function action(options) {
  return async (tree) => {
    // `nest g action <domain>[/<resource>] <verb>`: the Nest CLI passes only the two positionals, so
    // the resource may ride on the domain; `npm run generate` passes --controller and --device-param.
    const [domain = '', named] = String(options.name ?? '')
      .trim()
      .split('/');
    const verb = String(options.path ?? '').trim();
    if (!/^[a-z][a-z-]*$/.test(domain) || !/^[a-z][a-z-]*$/.test(verb))
      throw new SchematicsException(
        'usage: nest g action <domain>[/<resource>] <verb>, kebab-case, e.g. nest g action authorities/devices reboot',
      );
    const known = DOMAINS[domain];
    if (known === undefined)
      throw new SchematicsException(
        `"${domain}" is not a domain module; choose one of ${Object.keys(DOMAINS).join(', ')}`,
      );
    const url = options.controller ?? named ?? known.default;
    const about = known.resources[url];
    if (about === undefined)
      throw new SchematicsException(
        `"${url}" is not a resource of ${domain}; choose one of ${Object.keys(known.resources).join(', ')}`,
      );
    const resource = options.resource ?? about.resource;
    const permission = options.permission ?? `${about.prefix}.${snake(verb)}`;
    // A device-scoped route finds its device by default: without it layer 3c could never allow it.
    const wanted =
      options.deviceParam ?? (about.locator !== undefined && DEVICE_SCOPED.test(permission) ? 'id' : 'none');
    const deviceParam = wanted === 'none' ? undefined : wanted;
    if (deviceParam !== undefined && about.locator === undefined)
      throw new SchematicsException(
        `/${url} is not device-scoped: --device-param applies to authorities, devices and authority-permissions`,
      );
    if (deviceParam !== undefined && deviceParam !== 'id')
      throw new SchematicsException(
        '--device-param must name the route parameter, which is id for POST /{id}/<verb> (or none)',
      );
    if (deviceParam !== undefined && !DEVICE_SCOPED.test(permission))
      throw new SchematicsException(
        `${permission} is not device-scoped, so the device authority layer can never allow it`,
      );
    const devices = deviceParam === undefined ? undefined : { locator: about.locator, fixture: about.fixture };
    const Verb = pascal(verb);
    const ActionClass = `${pascal(url)}${Verb}Action`;
    const DtoClass = `${pascal(url)}${Verb}Dto`;
    const ResultClass = `${pascal(url)}${Verb}ResultDto`;
    const actionFile = `${url}-${verb}.action`;
    const written = [];
    const create = (path, text) => {
      tree.create(path, text);
      written.push(path);
    };
    const overwrite = (path, text) => {
      tree.overwrite(path, text);
      written.push(path);
    };

    // The permission in the catalogue, with the next free id, and a migration seeding it.
    const catalogue = read(tree, 'src/platform/auth/permissions.ts');
    if (catalogue.includes(`code: '${permission}'`))
      throw new SchematicsException(`${permission} is already in the catalogue`);
    const nextId = Math.max(...[...catalogue.matchAll(/\{ id: (\d+), code:/g)].map((match) => Number(match[1]))) + 1;
    overwrite(
      'src/platform/auth/permissions.ts',
      catalogue.replace('] as const;', `  { id: ${nextId}, code: '${permission}' },\n] as const;`),
    );
    const timestamp = Date.now();
    const migrationFile = `${timestamp}-permission-${permission.replace(/[._]/g, '-')}`;
    const migrationClass = `Permission${pascal(snake(permission))}${timestamp}`;
    create(
      `migrations/${migrationFile}.ts`,
      `import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Seeds the permission of the \`${verb}\` action of \`/${url}\` (generated by \`nest g action\`). */
export class ${migrationClass} implements MigrationInterface {
  name = '${migrationClass}';

  async up(db: QueryRunner): Promise<void> {
    await db.query('INSERT INTO permissions (id, code, device_scoped) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING', [${nextId}, '${permission}', ${DEVICE_SCOPED.test(permission)}]);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DELETE FROM permissions WHERE id = $1', [${nextId}]);
  }
}
`,
    );
    let migrations = read(tree, 'migrations/index.ts');
    migrations = addImport(migrations, `import { ${migrationClass} } from './${migrationFile}.js';`);
    // The class goes last in the MIGRATIONS array (whatever the file declares after it).
    migrations = migrations.replace(
      /(export const MIGRATIONS = \[[\s\S]*?),?\s*\];/,
      (_whole, list) => `${list},\n  ${migrationClass},\n];`,
    );
    overwrite('migrations/index.ts', migrations);

    // The request DTO and the response shape.
    create(
      `src/${domain}/dto/${url}-${verb}.dto.ts`,
      `import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString } from 'class-validator';
import { MaxLength } from '../../platform/http/text-length.js';

/** Body of \`POST /v1/admin/${url}/{id}/${verb}\`. */
export class ${DtoClass} {
  @ApiPropertyOptional({ maxLength: 500, description: 'Recorded in the audit event' })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  reason?: string;
}

/** What the action answers. */
export class ${ResultClass} {
  @ApiProperty() id!: number;
}
`,
    );

    // The action class: one transaction with its audit event.
    create(
      `src/${domain}/${actionFile}.ts`,
      `import { Injectable } from '@nestjs/common';
import { AuditService } from '../platform/audit/audit.service.js';
import type { IfMatch } from '../platform/http/etag.js';
import { ResourceResponse } from '../platform/http/responses.js';
import { UnitOfWork } from '../platform/database/unit-of-work.js';
import type { ${DtoClass}, ${ResultClass} } from './dto/${url}-${verb}.dto.js';

/** \`${verb}\` on a ${resource.replace(/_/g, ' ')}: one transaction with its \`${resource}.${snake(verb)}\` audit event. */
@Injectable()
export class ${ActionClass} {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly audit: AuditService,
  ) {}

  async run(id: number, dto: ${DtoClass}, ifMatch: IfMatch): Promise<ResourceResponse<${ResultClass}>> {
    return this.uow.run(async (tx) => {
      // Lock the record through its repository (404 when missing), assertIfMatch(ifMatch, row.version),
      // check the rules (throw ApiError with a code of the contract), write the change, then:
      await this.audit.record(tx, '${resource}.${snake(verb)}', id, { reason: dto.reason ?? null });
      void ifMatch;
      throw new Error('${url} ${verb} is not implemented yet');
    });
  }
}
`,
    );

    // The route on the resource's controller.
    const controllerPath = `src/${domain}/${url}.controller.ts`;
    let controller = read(tree, controllerPath);
    controller = addNamedImports(controller, '@nestjs/common', ['Body', 'Post']);
    controller = addNamedImports(controller, '../platform/auth/authorize.decorator.js', ['Authorize']);
    controller = addNamedImports(controller, '../platform/http/openapi/describe.decorator.js', ['Describe']);
    controller = addNamedImports(controller, '../platform/auth/record-write.decorator.js', [
      'Write',
      'type RecordWrite',
    ]);
    controller = addNamedImports(controller, '../platform/http/responses.js', ['type ResourceResponse']);
    if (devices !== undefined) {
      controller = addNamedImports(controller, '../platform/auth/device-locators.js', ['deviceOf']);
      controller = addNamedImports(controller, './device-locators.js', [devices.locator]);
    }
    controller = addImport(controller, `import { ${DtoClass}, ${ResultClass} } from './dto/${url}-${verb}.dto.js';`);
    controller = addImport(controller, `import { ${ActionClass} } from './${actionFile}.js';`);
    controller = addConstructorParameter(controller, `private readonly ${camel(verb)}Action: ${ActionClass}`);
    const device = devices === undefined ? '' : `, device: deviceOf(${devices.locator}, '${deviceParam}')`;
    controller = beforeLastBrace(
      controller,
      `
  @Post(':id/${verb}')
  @Authorize({ permission: '${permission}'${device} })
  @Describe({
    summary: '${Verb} ${article(resource)} ${resource.replace(/_/g, ' ')}',
    returns: ${ResultClass},
    errors: [400, 404, 409, 412],
  })
  ${camel(verb)}(@Write() { id, ifMatch }: RecordWrite, @Body() dto: ${DtoClass}): Promise<ResourceResponse<${ResultClass}>> {
    return this.${camel(verb)}Action.run(id, dto, ifMatch);
  }
`,
    );
    overwrite(controllerPath, controller);

    // The provider in the domain's module.
    const modulePath = `src/${domain}/${domain}.module.ts`;
    let module = read(tree, modulePath);
    module = addImport(module, `import { ${ActionClass} } from './${actionFile}.js';`);
    module = module.replace(/providers: \[/, `providers: [${ActionClass}, `);
    overwrite(modulePath, module);

    create(`test/e2e/${url}-${verb}.spec.ts`, spec({ domain, verb, url, resource, permission, ActionClass, devices }));

    // In the project's format, so `npm run format:check` stays green.
    for (const path of written) {
      const filepath = join(process.cwd(), path);
      const config = (await prettier.resolveConfig(filepath)) ?? {};
      tree.overwrite(path, await prettier.format(read(tree, path), { ...config, filepath }));
    }
    return tree;
  };
}

module.exports = { action };
