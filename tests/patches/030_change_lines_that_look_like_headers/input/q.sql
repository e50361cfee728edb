-- old
select 1;
