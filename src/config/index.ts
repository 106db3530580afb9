/**
 * The configuration (docs/configuration.md): every key with its rule and default (schema.ts),
 * loaded from the defaults, the JSON file and the environment (load.ts), and the errors that name
 * a bad key (config-errors.ts). The face of src/config/ for jobs/ and cli/.
 */
export { configSchema, SINK_KINDS, type Config, type DeploymentConfig, type SinkConfig, type SinkKind, type WebhookEndpointConfig } from './schema.ts';
export {
  chooseByConnectionName,
  chooseConnection,
  deploymentSecrets,
  loadConfig,
  loadDeployment,
  maskConfig,
  maskDeployment,
  mirrorPaths,
  daemonAddress,
  tokenSetting,
  withMirrorPath,
  type LoadConfigOptions,
} from './load.ts';
export { ConfigError, ConnectionChoiceError } from './config-errors.ts';
