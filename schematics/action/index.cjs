// `nest g action <domain> <verb>`: adds POST /v1/admin/<domain>/{id}/<verb> in the project's own
// style. It edits the domain's controller and module and the permission catalogue, and creates
// a service class (one transaction with its audit event), a request DTO, a migration seeding the
// permission and an e2e spec that fails until the action is implemented.
const { SchematicsException } = require('@angular-devkit/schematics');

const RESOURCES = { users: 'user', authorities: 'authority', inbox: 'inbox_message', devices: 'mobile_device', 'read-state': 'message_read_state', grants: 'permission_grant' };
const PERMISSION_PREFIXES = { devices: 'mobile_devices', grants: 'permission_grants', 'read-state': 'read_state' };

const pascal = (text) => text.split(/[-_]/).map((part) => part.charAt(0).toUpperCase() + part.slice(1)).join('');
const camel = (text) => { const value = pascal(text); return value.charAt(0).toLowerCase() + value.slice(1); };
const snake = (text) => text.replace(/-/g, '_');

function read(tree, path) {
  const buffer = tree.read(path);
  if (buffer === null) throw new SchematicsException(`${path} does not exist: is "${path.split('/')[1]}" a domain folder under src/?`);
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

/** Adds names to the `import [type] { … } from '<module>'` line (keeping its order), or a new import line. */
function addNamedImports(source, module, names) {
  const pattern = new RegExp(`import (type )?\\{([^}]*)\\} from '${module.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}';`);
  const match = pattern.exec(source);
  if (match === null) return addImport(source, `import { ${names.join(', ')} } from '${module}';`);
  const typeOnly = match[1] !== undefined;
  const bare = (name) => name.replace(/^type /, '');
  const existing = match[2].split(',').map((name) => name.trim()).filter(Boolean);
  const missing = names.filter((name) => !existing.some((present) => bare(present) === bare(name))).map((name) => (typeOnly ? bare(name) : name));
  if (missing.length === 0) return source;
  return source.replace(match[0], `import ${typeOnly ? 'type ' : ''}{ ${[...existing, ...missing].join(', ')} } from '${module}';`);
}

function addConstructorParameter(source, parameter) {
  const start = source.indexOf('constructor(');
  if (start < 0) throw new SchematicsException('the controller has no constructor to inject the action into');
  const close = source.indexOf(') {}', start);
  const inside = source.slice(start + 'constructor('.length, close).replace(/,?\s*$/, '');
  const params = inside.trim() === '' ? [] : inside.split(',').map((part) => part.trim()).filter(Boolean);
  const rebuilt = `constructor(\n${[...params, parameter].map((part) => `    ${part},`).join('\n')}\n  ) {}`;
  return `${source.slice(0, start)}${rebuilt}${source.slice(close + ') {}'.length)}`;
}

function action(options) {
  return (tree) => {
    const domain = String(options.name ?? '').trim();
    const verb = String(options.path ?? '').trim();
    if (!/^[a-z][a-z-]*$/.test(domain) || !/^[a-z][a-z-]*$/.test(verb)) throw new SchematicsException('usage: nest g action <domain> <verb>, both kebab-case, e.g. nest g action authorities suspend');
    const resource = options.resource ?? RESOURCES[domain] ?? snake(domain).replace(/s$/, '');
    const permission = options.permission ?? `${PERMISSION_PREFIXES[domain] ?? snake(domain)}.${snake(verb)}`;
    const Verb = pascal(verb);
    const ActionClass = `${pascal(domain)}${Verb}Action`;
    const DtoClass = `${pascal(domain)}${Verb}Dto`;
    const ResultClass = `${pascal(domain)}${Verb}ResultDto`;
    const actionFile = `${domain}-${verb}.action`;

    // The permission in the catalogue, with the next free id, and a migration seeding it.
    const catalogue = read(tree, 'src/auth/permissions.ts');
    if (catalogue.includes(`code: '${permission}'`)) throw new SchematicsException(`${permission} is already in the catalogue`);
    const nextId = Math.max(...[...catalogue.matchAll(/\{ id: (\d+), code:/g)].map((match) => Number(match[1]))) + 1;
    tree.overwrite('src/auth/permissions.ts', catalogue.replace('] as const;', `  { id: ${nextId}, code: '${permission}' },\n] as const;`));
    const timestamp = Date.now();
    const migrationClass = `Permission${pascal(snake(permission).replace(/\./g, '-'))}${timestamp}`;
    tree.create(
      `migrations/${timestamp}-permission-${permission.replace(/[._]/g, '-')}.ts`,
      `import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Seeds the permission of the \`${verb}\` action of \`${domain}\` (generated by \`nest g action\`). */
export class ${migrationClass} implements MigrationInterface {
  name = '${migrationClass}';

  async up(db: QueryRunner): Promise<void> {
    await db.query('INSERT INTO permissions (id, code, device_scoped) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING', [${nextId}, '${permission}', ${/^(devices|authorities|authority_permissions)\./.test(permission)}]);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DELETE FROM permissions WHERE id = $1', [${nextId}]);
  }
}
`,
    );
    let migrations = read(tree, 'migrations/index.ts');
    migrations = addImport(migrations, `import { ${migrationClass} } from './${timestamp}-permission-${permission.replace(/[._]/g, '-')}.js';`);
    migrations = migrations.replace(/\];\s*$/, `, ${migrationClass}];\n`);
    tree.overwrite('migrations/index.ts', migrations);

    // The request DTO and the response shape.
    tree.create(
      `src/${domain}/${verb}.dto.ts`,
      `import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, MaxLength } from 'class-validator';

/** Body of \`POST /v1/admin/${domain}/{id}/${verb}\`. */
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

    // The service class: one transaction with its audit event.
    tree.create(
      `src/${domain}/${actionFile}.ts`,
      `import { Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service.js';
import type { IfMatch } from '../common/etag.js';
import { ResourceResponse } from '../common/responses.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import type { ${DtoClass}, ${ResultClass} } from './${verb}.dto.js';

/** \`${verb}\` on a ${resource}: one transaction with its \`${resource}.${snake(verb)}\` audit event. */
@Injectable()
export class ${ActionClass} {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly audit: AuditService,
  ) {}

  async run(id: number, dto: ${DtoClass}, ifMatch: IfMatch): Promise<ResourceResponse<${ResultClass}>> {
    return this.uow.run(async (tx) => {
      // Lock the record (404 when missing), assertIfMatch(ifMatch, row.version), check the rules
      // (throw ApiError with a code of the contract), write the change, then:
      await this.audit.record(tx.db, { action: '${resource}.${snake(verb)}', resource_type: '${resource}', resource_id: id, reason: dto.reason ?? null, changes: {} });
      void ifMatch;
      throw new Error('${domain} ${verb} is not implemented yet');
    });
  }
}
`,
    );

    // The route on the domain's controller.
    const controllerPath = `src/${domain}/${domain}.controller.ts`;
    let controller = read(tree, controllerPath);
    controller = addNamedImports(controller, '@nestjs/common', ['Body', 'Post']);
    controller = addNamedImports(controller, '../auth/authorize.decorator.js', ['Authorize']);
    controller = addNamedImports(controller, '../common/etag.js', ['IfMatchHeader', 'type IfMatch']);
    controller = addNamedImports(controller, '../common/id.pipe.js', ['IdParam']);
    controller = addNamedImports(controller, '../common/openapi/api-envelope.decorator.js', ['ApiEnvelope']);
    controller = addNamedImports(controller, '../common/responses.js', ['type ResourceResponse']);
    controller = addImport(controller, `import { ${DtoClass}, ${ResultClass} } from './${verb}.dto.js';`);
    controller = addImport(controller, `import { ${ActionClass} } from './${actionFile}.js';`);
    controller = addConstructorParameter(controller, `private readonly ${camel(verb)}Action: ${ActionClass}`);
    controller = beforeLastBrace(
      controller,
      `
  @Post(':id/${verb}')
  @Authorize({ permission: '${permission}', summary: '${Verb} a ${resource.replace(/_/g, ' ')}' })
  @ApiEnvelope(${ResultClass}, { errors: [400, 404, 409, 412] })
  ${camel(verb)}(@IdParam() id: number, @Body() dto: ${DtoClass}, @IfMatchHeader() ifMatch: IfMatch): Promise<ResourceResponse<${ResultClass}>> {
    return this.${camel(verb)}Action.run(id, dto, ifMatch);
  }
`,
    );
    tree.overwrite(controllerPath, controller);

    // The provider in the domain's module.
    const modulePath = `src/${domain}/${domain}.module.ts`;
    let module = read(tree, modulePath);
    module = addImport(module, `import { ${ActionClass} } from './${actionFile}.js';`);
    module = module.replace(/providers: \[/, `providers: [${ActionClass}, `);
    tree.overwrite(modulePath, module);

    // An e2e spec that fails until the action does its work.
    tree.create(
      `test/e2e/${domain}-${verb}.spec.ts`,
      `import { actor } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';

// Generated by \`nest g action ${domain} ${verb}\`: it fails until ${ActionClass}.run is implemented.
describe('POST /v1/admin/${domain}/{id}/${verb}', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ widgets: false });
  });
  afterAll(() => t.close());

  it('${verb}s the ${resource.replace(/_/g, ' ')} and records the audit event', async () => {
    const root = await actor('super_admin');
    const response = await t.http().post('/v1/admin/${domain}/1/${verb}').set('Authorization', root.auth).send({ reason: 'generated spec' });
    expect(response.status).toBe(200);
    expect(response.body.data).toEqual({ id: 1 });
    const events = await sql('SELECT action, reason FROM audit_events WHERE request_id = $1', [response.headers['x-request-id']]);
    expect(events).toEqual([{ action: '${resource}.${snake(verb)}', reason: 'generated spec' }]);
  });

  it('is refused without the permission ${permission}', async () => {
    const viewer = await actor('viewer');
    const response = await t.http().post('/v1/admin/${domain}/1/${verb}').set('Authorization', viewer.auth).send({});
    expect(response.status).toBe(403);
    expect(response.body.error.details).toEqual({ permission: '${permission}' });
  });
});
`,
    );
    return tree;
  };
}

module.exports = { action };
