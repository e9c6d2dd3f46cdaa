-- Every (model, firmware, direction, hour) histogram's shares add up to 1.
select array_model, firmware, direction, period_start, sum(share) as total
from {{ ref('install_base_histogram') }}
group by array_model, firmware, direction, period_start
having abs(total - 1) > 1e-9
