export interface ClusterNode {
  readonly port: number;
  alive: boolean;
}

export interface RedisCluster {
  readonly nodes: readonly ClusterNode[];
  readonly dir: string;
  /** `redis+cluster://` with every live node. */
  readonly url: string;
  killMasterOf(slot: number): Promise<number>;
  masterOf(slot: number): Promise<number>;
  mastersWithReplicas(): Promise<number[]>;
  freezeReplicasOf(slot: number): Promise<number[]>;
  thaw(ports: readonly number[]): void;
  waitForSlot(slot: number, timeoutMs?: number): Promise<number>;
  stop(): Promise<void>;
}

export function startRedisCluster(options?: {
  masters?: number;
  replicas?: number;
  nodeTimeoutMs?: number;
}): Promise<RedisCluster>;

export function hashSlot(key: string): number;
