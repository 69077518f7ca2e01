/* store.c — the checkpoint store on RocksDB (DESIGN.md §4). Not built yet:
 * it arrives with the checkpoint issue; until then the checkpoint module is
 * empty and GET /v1/info reports checkpoint_recovery as uncovered. */
