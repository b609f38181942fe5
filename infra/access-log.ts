/**
 * The stage's access log format, from the field list the local emulator evaluates too
 * (lib/api/access-log.ts): what a test reads locally is what API Gateway writes.
 */
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import { accessLogTemplate } from '../lib/api/access-log.ts';

export function accessLogFormat(): AccessLogFormat {
  return AccessLogFormat.custom(accessLogTemplate());
}
