"""A Flink job that only copies records Kafka -> Kafka (key and value as raw bytes): the ceiling the
end-to-end benchmark prints beside the normalize job, on the same records, connectors and settings
(flink-jobs/common/runtime.py). Not part of the product.

    python tests/benchmarks/copy_job.py --input TOPIC --output-prefix PREFIX --bounded --from-earliest
"""

from flink_jobs.common import runtime

JOB = "copy"
OPTIONS = [
    (("--input",), {"required": True, "help": "topic to copy"}),
    (("--output-prefix",), {"required": True, "help": "writes PREFIX.copy"}),
]


def main() -> None:
    args = runtime.arguments(__doc__, OPTIONS)
    env = runtime.table_env(JOB, args)
    env.execute_sql(f"""
        CREATE TABLE source (k BYTES, v BYTES) WITH ({runtime.kafka_options(args, JOB, args.input)},
            'key.format' = 'raw', 'key.fields' = 'k', 'value.format' = 'raw', 'value.fields-include' = 'EXCEPT_KEY')""")
    env.execute_sql(f"""
        CREATE TABLE copy (k BYTES, v BYTES) WITH ('connector' = 'kafka', 'topic' = '{args.output_prefix}.copy',
            {", ".join(f"'{k}' = '{v}'" for k, v in runtime.kafka_properties(args, JOB).items())},
            'key.format' = 'raw', 'key.fields' = 'k',
            'value.format' = 'raw', 'value.fields-include' = 'EXCEPT_KEY',
            'sink.delivery-guarantee' = 'at-least-once', 'properties.compression.type' = 'lz4',
            'properties.linger.ms' = '20', 'properties.batch.size' = '524288')""")
    runtime.run_until_stopped(env.execute_sql("INSERT INTO copy SELECT k, v FROM source"))


if __name__ == "__main__":
    main()
