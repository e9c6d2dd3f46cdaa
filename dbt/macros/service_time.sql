{#- The figures of a service-time histogram, one definition for the marts. A dense histogram is an array of 32 I/O
    counts, element n + 1 holding bucket n: (2^(n-8), 2^(n-7)] ms (clickhouse/migrations/0006). -#}

{#- Bucket 4, (0.0625, 0.125] ms: the bar the Express Writes study reads ("nearly 40 % of writes at .12 ms"). -#}
{% macro share_0_0625_to_0_125_ms(histogram) -%}
    {{ histogram }}[5] / arraySum({{ histogram }})
{%- endmacro %}

{#- Buckets 0 to 4, at or under 0.125 ms: the cumulative share. -#}
{% macro share_within_0_125_ms(histogram) -%}
    arraySum(arraySlice({{ histogram }}, 1, 5)) / arraySum({{ histogram }})
{%- endmacro %}

{#- A bucket's representative service time: the geometric midpoint of its bounds (lower x sqrt 2). The bounds double,
    so inside a bucket the I/Os spread evenly on a log scale rather than a linear one: on the simulator's lognormal
    mixtures this reads the mean 2 % high, the arithmetic midpoint (lower x 1.5) 8 % high. Bucket 0 has no lower
    bound (half its upper, 2^-8 ms); the open-ended bucket 31 its lower bound, as serviceTimeQuantile has it. -#}
{% macro service_time_midpoint_ms(bucket) -%}
    if({{ bucket }} = 0, pow(2, -8), if({{ bucket }} = 31, pow(2, 23), pow(2, {{ bucket }} - 8) * sqrt(2)))
{%- endmacro %}

{% macro service_time_mean_ms(histogram) -%}
    arraySum(arrayMap((c, b) -> c * {{ service_time_midpoint_ms('b') }}, {{ histogram }}, range(32)))
    / arraySum({{ histogram }})
{%- endmacro %}

{% macro service_time_quantile_ms(histogram, q) -%}
    serviceTimeQuantile(range(32), {{ histogram }}, {{ q }})
{%- endmacro %}

{#- The dense histogram of sumMap's (buckets, counts). -#}
{% macro dense_histogram(sparse) -%}
    arrayMap(b -> arrayElement({{ sparse }}.2, indexOf({{ sparse }}.1, b)), range(32))
{%- endmacro %}

{#- A Poisson(1) count drawn from a 64-bit hash: each period's weight in a resample of the Poisson bootstrap. -#}
{% macro poisson_1_draw(hash) -%}
    arraySum(arrayMap(
        threshold -> toUInt8({{ hash }} % 1000000 >= threshold),
        [367879, 735759, 919699, 981012, 996340, 999406, 999917, 999990]
    ))
{%- endmacro %}
