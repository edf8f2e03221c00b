import { CycleLensError, ErrorCode } from '../../errors';
import type { InjectionRefusal } from './types';
import type { InjectionWarning, InjectionWarningCode } from '../../../common/dapCustom';

/**
 * A refusal that reaches the user: the planner's sentence (what, where, why, what instead) and
 * the structured refusal for callers that offer the alternative (call-site instrumentation).
 * ErrorCode.Unsupported until errors.ts has a code of its own for injection refusals.
 */
export class InjectionRefusedError extends CycleLensError {
  constructor(readonly refusal: InjectionRefusal) {
    super(ErrorCode.Unsupported, refusal.reason);
    this.name = 'InjectionRefusedError';
  }
}

export function refusal(code: InjectionRefusal['code'], reason: string, address?: number): InjectionRefusal {
  return { ok: false, code, reason, ...(address !== undefined ? { address } : {}) };
}

export const hex = (n: number): string => `0x${(n >>> 0).toString(16)}`;

/** A note on a measurement's figures, with the code the extension decides its presentation by. */
export function warning(code: InjectionWarningCode, message: string): InjectionWarning {
  return { code, message };
}
