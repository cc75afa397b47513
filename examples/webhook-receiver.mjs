// A webhook receiver for trying the service's webhooks on this machine (docs/events-and-webhooks.md):
//   WEBHOOK_SECRET=whsec_… node examples/webhook-receiver.mjs
// It verifies every delivery with the Standard Webhooks reference implementation (`standardwebhooks`,
// installed with the project) and prints one line per event. It listens on 127.0.0.1 only
// (RECEIVER_PORT, 8080 by default): a server delivers to it with WEBHOOK_ALLOW_HTTP=true and
// WEBHOOK_ALLOW_PRIVATE=true, settings for local use only.
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';

const secret = process.env.WEBHOOK_SECRET;
if (secret === undefined || !secret.startsWith('whsec_')) {
  process.stderr.write('WEBHOOK_SECRET must be the whsec_… secret from the create or rotate-secret answer\n');
  process.exit(1);
}
const hook = new Webhook(secret);
const port = Number(process.env.RECEIVER_PORT ?? 8080);

createServer((request, response) => {
  let body = '';
  request.on('data', (chunk) => (body += chunk));
  request.on('end', () => {
    try {
      const event = hook.verify(body, request.headers); // throws on a bad signature or an old timestamp
      process.stdout.write(`${event.id} ${event.type} ${event.resource_type ?? '-'} ${event.resource_id ?? '-'}\n`);
      response.writeHead(204).end(); // any 2xx within 10 s counts as delivered
    } catch (error) {
      process.stderr.write(`refused a delivery: ${error instanceof Error ? error.message : String(error)}\n`);
      response.writeHead(400).end();
    }
  });
}).listen(port, '127.0.0.1', () => process.stderr.write(`listening on http://127.0.0.1:${port}/\n`));
