-- keep
select 1;
