-- keep
-- old rule
select 1;
