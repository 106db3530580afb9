/**
 * GET /vault-credentials/{credentialId} (spec §4.2, scope vault:admin): reveals one credential with its
 * secret. Rules: (1) the caller must be a member of the credential's folder, else 403; (2)
 * lastAccessedAt is updated; (3) a VIEW audit event is written (`company.data.auditEvents`).
 * A credential of another company, or an unknown id, is 404.
 */
import { HttpError, notFound } from '../http-error.ts';
import { credentialView } from '../serialize.ts';
import type { RequestContext, Route } from './types.ts';

function revealCredential(context: RequestContext) {
  const data = context.company.data;
  const credential = data.vaultCredentials.find((candidate) => candidate.id === context.params.credentialId);
  if (!credential) throw notFound(`Credential ${context.params.credentialId} not found`);
  const folder = data.vaultFolders.find((candidate) => candidate.id === credential.parentId);
  if (!folder || !folder.memberEmployeeIds.includes(context.employee.id)) {
    throw new HttpError(403, `You do not have access to credential ${credential.id}: you are not a member of its folder`);
  }
  const now = context.company.now();
  credential.lastAccessedAt = now;
  data.auditEvents.push({ id: context.company.newId('aud'), action: 'VIEW', credentialId: credential.id, employeeId: context.employee.id, via: 'API', at: now });
  return { message: 'Credential revealed', content: { credential: credentialView(credential), sensitiveData: { ...credential.sensitiveData } } };
}

/** GET /vault-credentials/{credentialId} (spec §4.2). */
export const vaultRoutes: Route[] = [{ method: 'GET', path: '/vault-credentials/{credentialId}', scope: 'vault:admin', handler: revealCredential }];
