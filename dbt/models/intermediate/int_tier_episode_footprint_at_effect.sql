-- Per episode and host: the Tier 0 footprint in the effect window. The arrays' poll can miss a window (a live poll
-- does, now and then): then it is interpolated between the volume's samples either side of it, at most a minute
-- away, as the share's chart draws it; without a sample that near it is unknown (null), not zero.
select
    a.episode_id as episode_id,
    a.host as host,
    countIf(t.window_start <= a.effect_window) > 0 as has_before,
    countIf(t.window_start >= a.effect_window) > 0 as has_after,
    argMaxIf(
        (t.window_start, t.tier0_bytes, t.tier0_share), t.window_start, t.window_start <= a.effect_window
    ) as before,
    argMinIf(
        (t.window_start, t.tier0_bytes, t.tier0_share), t.window_start, t.window_start >= a.effect_window
    ) as after,
    -- how far the effect window lies from the sample before it towards the one after (0: the sample before)
    if(
        has_before and has_after and tupleElement(after, 1) > tupleElement(before, 1),
        dateDiff('millisecond', tupleElement(before, 1), a.effect_window)
        / dateDiff('millisecond', tupleElement(before, 1), tupleElement(after, 1)),
        if(has_before, 0, 1)
    ) as towards_after,
    toNullable(
        tupleElement(before, 2) + towards_after * (tupleElement(after, 2) - tupleElement(before, 2))
    ) as tier0_bytes,
    toNullable(
        tupleElement(before, 3) + towards_after * (tupleElement(after, 3) - tupleElement(before, 3))
    ) as tier0_share
from {{ ref('int_tier_episode_effect_at') }} as a
inner join {{ ref('int_tier_episodes_with_next_start') }} as e on a.episode_id = e.episode_id
inner join {{ ref('int_volume_tier_windows') }} as t on e.array = t.array and e.volume = t.volume
where
    t.window_start >= a.effect_window - toIntervalSecond(60)
    and t.window_start <= a.effect_window + toIntervalSecond(60)
group by a.episode_id, a.host, a.effect_window
