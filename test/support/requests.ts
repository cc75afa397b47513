import type supertest from 'supertest';
import type { TestApp } from './app.js';

/** Requests made as one authenticated caller. */
export function caller(t: TestApp, who: { auth: string }) {
  return {
    get: (path: string): supertest.Test => t.http().get(path).set('Authorization', who.auth),
    post: (path: string, body?: object): supertest.Test => {
      const request = t.http().post(path).set('Authorization', who.auth);
      return body === undefined ? request : request.send(body);
    },
    patch: (path: string, body: object): supertest.Test =>
      t.http().patch(path).set('Authorization', who.auth).send(body),
    delete: (path: string): supertest.Test => t.http().delete(path).set('Authorization', who.auth),
  };
}
